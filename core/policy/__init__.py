"""Whether a tool call runs: the approval policy per mode, the permission rules, and the
command hooks around prompts and tool calls."""
