"""The commands a session offers beyond the built-ins: its skills, the repository's prompt
commands (`.hermes/commands/*.md`) and its MCP servers' prompts.

Each becomes a user message (a skill's body, a filled-in template, a server's prompt);
none ever enters the system prompt. A built-in keeps its name; of two extras with one
name the first listed here wins (skill, then prompt command, then MCP prompt).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_acp.bridge.commands import COMMAND_NAMES

if TYPE_CHECKING:
    from hermes_acp.session.state import Session

log = logging.getLogger(__name__)

Source = Literal["skill", "prompt", "mcp"]


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
    from core.skills import COMMAND_NAME, discover_commands

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


async def command_message(session: Session, command: CustomCommand, argument: str) -> str:
    """The user message the command sends to the model. McpCallFailed, SkillError, OSError
    or UnicodeDecodeError when it cannot be made."""
    if command.source == "skill":
        body = await asyncio.to_thread(command.target.body)
        text = f'<skill name="{command.name}" folder="{command.target.path.parent}">\n{body}\n</skill>'
        return f"{text}\n\n{argument}" if argument else text
    if command.source == "prompt":
        return str(command.target.render(argument))
    from core.mcp_tools import McpCallFailed

    server, info = command.target
    if session.mcp is None:
        raise McpCallFailed(f"The MCP server {server!r} is not connected.")
    result = await session.mcp.get_prompt(server, info.name, mcp_arguments(info, argument))
    return render_prompt(result)


def mcp_arguments(info: Any, argument: str) -> dict[str, str]:
    """The typed text as the prompt's arguments: one argument takes it all; with several,
    words fill them in order and the last takes the rest."""
    names = [a.name for a in info.arguments or []]
    if not names or not argument:
        return {}
    if len(names) == 1:
        return {names[0]: argument}
    words = argument.split(maxsplit=len(names) - 1)
    return dict(zip(names, words, strict=False))


def render_prompt(result: Any) -> str:
    """An MCP GetPromptResult as one message: text kept, anything else named."""
    parts: list[str] = []
    for message in result.messages:
        content = message.content
        text = getattr(content, "text", None)
        if text is None:
            resource = getattr(content, "resource", None)
            text = getattr(resource, "text", None)
        if text is None:
            text = f"[{getattr(content, 'type', 'content')} from the prompt, not shown]"
        parts.append(text if message.role == "user" else f"(assistant) {text}")
    return "\n\n".join(parts)


def _command_name(name: str) -> str:
    cleaned = re.sub(r"[^\w-]+", "-", name).strip("-_") or "prompt"
    return cleaned if cleaned[0].isalpha() else f"p-{cleaned}"
