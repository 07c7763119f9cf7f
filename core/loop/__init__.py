"""One turn and what it runs on: the turn's loop, its budget and inbox, the conversation,
the model it talks to, the tool calls of a response, compression."""
