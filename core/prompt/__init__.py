"""What the model is told besides the conversation: the system prompt, context files,
skills, memory, the repository they are found from, images it is shown."""
