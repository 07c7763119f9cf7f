"""Slash commands: a prompt such as `/mode plan` that the agent answers itself.

`menu` is what a session offers (the built-ins, its skills, the repository's prompt
commands, its MCP servers' prompts), how a prompt is recognised as a command, and the
`available_commands_update` that fills the editor's `/` menu. `run` carries a command
out and says what it did.
"""
