"""The commands a session offers, recognising one in a prompt, and the editor's `/` menu.

Besides the built-ins a session offers its skills, the repository's prompt commands
(`.hermes/commands/*.md`) and its MCP servers' prompts. Each of those becomes a user
message (a skill's body, a filled-in template, a server's prompt); none ever enters the
system prompt. A built-in keeps its name; of two extras with one name the first listed
here wins (skill, then prompt command, then MCP prompt).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from hermes_acp.session.state import Session

log = logging.getLogger(__name__)

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
    {
        "name": "rewind",
        "description": "List the prompts, or restore files and conversation to just before one",
        "input": {"hint": "[N] [files | chat] [force]"},
    },
    {"name": "jobs", "description": "List the background commands still running"},
    {
        "name": "permissions",
        "description": "Show the permission rules and what is always allowed in this project",
        "input": {"hint": "[trust | revoke N]"},
    },
]

COMMAND_NAMES = frozenset(command["name"] for command in AVAILABLE_COMMANDS)

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.DOTALL)

Source = Literal["skill", "prompt", "mcp"]


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


async def session_menu(session: Session) -> tuple[dict[str, Any], bool]:
    """The session's whole menu as `available_commands_update` params, and whether it has
    anything beyond the built-ins. Listed in a thread: skills and prompt commands are files."""
    extra = await asyncio.to_thread(menu_entries, session)
    return commands_update(session.id, extra), bool(extra)


@dataclass(frozen=True, slots=True)
class CustomCommand:
    name: str
    description: str
    source: Source
    target: Any  # Skill, PromptCommand, or (server, mcp Prompt)
    hint: str | None = None

    def menu_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.hint:
            entry["input"] = {"hint": self.hint}
        return entry


def session_commands(session: Session) -> dict[str, CustomCommand]:
    """The session's extra commands by name, in menu order."""
    from hermes_core.prompt.skills import COMMAND_NAME, discover_commands

    found: dict[str, CustomCommand] = {}

    def add(command: CustomCommand) -> None:
        if command.name in COMMAND_NAMES or command.name in found:
            log.info("command /%s (%s) left out: the name is taken", command.name, command.source)
            return
        found[command.name] = command

    skill_tool = session.agent.tools.get("skill")
    for skill in getattr(skill_tool, "skills", {}).values():
        add(CustomCommand(skill.name, f"Skill: {skill.description}", "skill", skill, "what to apply it to"))
    for prompt in discover_commands(Path(session.cwd)):
        hint = "arguments" if "$ARGUMENTS" in prompt.template else None
        add(CustomCommand(prompt.name, prompt.description, "prompt", prompt, hint))
    if session.mcp is not None:
        for server, info in session.mcp.prompts():
            name = info.name if COMMAND_NAME.fullmatch(info.name) else _command_name(info.name)
            description = f"{server}: {info.description or info.title or info.name}"
            names = [argument.name for argument in info.arguments or []]
            add(CustomCommand(name, description, "mcp", (server, info), " ".join(names) or None))
    return found


def menu_entries(session: Session) -> list[dict[str, Any]]:
    try:
        commands = session_commands(session)
    except Exception:  # the menu must still come: built-ins work without these
        log.warning("session %s: custom commands could not be listed", session.id, exc_info=True)
        return []
    return [command.menu_entry() for command in commands.values()]


def _command_name(name: str) -> str:
    cleaned = re.sub(r"[^\w-]+", "-", name).strip("-_") or "prompt"
    return cleaned if cleaned[0].isalpha() else f"p-{cleaned}"
