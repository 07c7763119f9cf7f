"""Slash commands: what the editor offers in its `/` menu, and recognising them in a prompt."""

from __future__ import annotations

import re
from typing import Any

AVAILABLE_COMMANDS: list[dict[str, Any]] = [
    {"name": "help", "description": "Show what hermes can do and the commands it understands"},
    {
        "name": "mode",
        "description": "Switch how much the agent may do without asking",
        "input": {"hint": "ask | accept_edits | plan | auto | yolo"},
    },
    {
        "name": "model",
        "description": "Switch the model for the next turns",
        "input": {"hint": "model id, e.g. gpt-4.1 or claude-sonnet-4-5"},
    },
    {"name": "compact", "description": "Summarise the conversation so far to free context"},
    {"name": "clear", "description": "Start over with an empty conversation (same session)"},
    {"name": "tools", "description": "List the tools the agent can use in this mode"},
    {"name": "context", "description": "Show how much of the context window is in use"},
    {"name": "cost", "description": "Show tokens used and cost so far in this session"},
    {
        "name": "steer",
        "description": "Add a note to the running turn; the model reads it at its next step",
        "input": {"hint": "what the agent should also know or do"},
    },
    {"name": "queue", "description": "Show the prompts waiting for the running turn to end"},
]

COMMAND_NAMES = frozenset(command["name"] for command in AVAILABLE_COMMANDS)

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.DOTALL)


def parse_command(text: str) -> tuple[str, str] | None:
    """`("mode", "plan")` for "/mode plan". Only a `/word` followed by a space or the end is a
    command (known or not: an unknown one is answered as such); "/etc/hosts is broken" and
    "/usr/bin is ..." stay prompts, since their word runs on into a path."""
    match = _COMMAND.fullmatch(text.strip())
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()


def commands_update(session_id: str, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The `available_commands_update` params for a session: the built-ins, then `extra`
    (skills, prompt commands, MCP prompts)."""
    return {
        "sessionId": session_id,
        "update": {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [*AVAILABLE_COMMANDS, *(extra or [])],
        },
    }
