"""Running a slash command typed as a prompt: the change it makes and the answer it gives.

A built-in changes the session and answers in one agent message (Markdown, no model
call); a skill, prompt command or MCP prompt becomes the user's message to the model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.channel import say
from hermes_acp.session.options import MODE_IDS, MODES
from hermes_acp.session.slash.menu import (
    AVAILABLE_COMMANDS,
    COMMAND_NAMES,
    CustomCommand,
    menu_entries,
    session_commands,
)

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.options import SessionControls
    from hermes_acp.session.state import Session
    from hermes_core.models import Usage
    from hermes_core.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

CLEARED = "Conversation cleared. The next prompt starts from an empty history."

# Sends a stream of agent events to the client and the store (the turn's own path).
StreamEvents = Callable[["Session", AsyncIterator[Any]], Awaitable[str]]


class SlashCommands:
    def __init__(self, channel: ClientChannel, controls: SessionControls) -> None:
        self.channel = channel
        self.controls = controls

    async def run(self, session: Session, name: str, argument: str, stream: StreamEvents) -> str:
        """Run one command; the turn's stop reason."""
        from hermes_core.store.writer import replace_history

        agent = session.agent
        controls = self.controls
        if name not in COMMAND_NAMES:
            return await self._run_custom(session, name, argument, stream)
        if name == "help":
            extra = await asyncio.to_thread(menu_entries, session)
            await self._say(session, help_text(agent.mode.value, session.model, extra))
        elif name == "mode":
            new_mode = argument if argument in MODE_IDS else None
            if new_mode is not None:
                controls.apply_mode(session, new_mode)
                await controls.notify_mode(session)
                await controls.notify_config(session)
            await self._say(session, mode_text(new_mode, agent.mode.value, argument))
        elif name == "model":
            new_model = argument.split()[0] if argument else None
            problem = await controls.model_problem(session, new_model) if new_model else None
            if new_model is not None and problem is None:
                controls.apply_model(session, new_model)
                await controls.notify_config(session)
            offered = controls.options(session).offered_models()
            await self._say(session, model_text(new_model, session.model, offered, problem))
        elif name == "tools":
            await self._say(session, tools_text(agent.tools, read_only=agent.mode.value == "plan"))
        elif name == "context":
            await self._say(
                session,
                context_text(agent.conversation.context_tokens, agent.context_window, len(agent.messages)),
            )
        elif name == "cost":
            await self._say(session, cost_text(agent.conversation.usage, agent.conversation.cost_usd))
        elif name == "clear":
            agent.replace_history([])
            replace_history(session, [])
            await self._say(session, CLEARED)
        elif name == "steer":
            if argument:  # no turn runs: the text is the prompt
                return await stream(session, agent.run_turn(argument))
            await self._say(session, steer_text(False))
        elif name == "queue":
            await self._say(session, queue_text(False, []))
        elif name == "rewind":
            from hermes_acp.session.rewind import rewind_command

            await self._say(session, await rewind_command(session, argument))
        elif name == "jobs":
            from hermes_core.execution.jobs import running_jobs_text

            await self._say(session, running_jobs_text(agent.tool_state.jobs))
        elif name == "permissions":
            from hermes_acp.session.slash.permissions import permissions_command

            await self._say(session, await permissions_command(session, argument))
        elif name == "compact":
            before = list(agent.messages)
            if before:
                await stream(session, agent.compact())
            await self._say(session, compact_text(len(before), len(agent.messages), agent.messages != before))
        return "end_turn"

    async def _run_custom(self, session: Session, name: str, argument: str, stream: StreamEvents) -> str:
        """A skill, prompt command or MCP prompt: its text goes to the model as the user's
        message. An unknown name is answered here and never reaches the model."""
        from hermes_core.mcp.tools import McpCallFailed
        from hermes_core.messages import TextPart
        from hermes_core.prompt.skills import SkillError

        command = (await asyncio.to_thread(session_commands, session)).get(name)
        if command is None:
            await self._say(session, unknown_text(name))
            return "end_turn"
        try:
            text = await command_message(session, command, argument)
        except (McpCallFailed, SkillError, OSError, UnicodeDecodeError) as exc:
            log.warning("session %s: /%s failed: %s", session.id, name, exc)
            await self._say(session, command_failed_text(name, str(exc)))
            return "end_turn"
        return await stream(session, session.agent.run_turn([TextPart(text)]))

    async def beside_turn(self, session: Session, name: str, argument: str) -> str:
        """`/steer` and `/queue` while a turn runs: they act on it instead of waiting for it."""
        if name == "steer":
            if argument:
                session.agent.steer(argument)
            await self._say(session, steer_text(bool(argument)))
        elif name == "jobs":
            from hermes_core.execution.jobs import running_jobs_text

            await self._say(session, running_jobs_text(session.agent.tool_state.jobs))
        else:
            waiting = [entry.preview for entry in session.waiting if not entry.cancelled]
            await self._say(session, queue_text(session.turn is not None, waiting))
        return "end_turn"

    async def _say(self, session: Session, text: str) -> None:
        await say(self.channel, session.id, text)


async def command_message(session: Session, command: CustomCommand, argument: str) -> str:
    """The user message the command sends to the model. McpCallFailed, SkillError, OSError
    or UnicodeDecodeError when it cannot be made."""
    if command.source == "skill":
        body = await asyncio.to_thread(command.target.body)
        text = f'<skill name="{command.name}" folder="{command.target.path.parent}">\n{body}\n</skill>'
        return f"{text}\n\n{argument}" if argument else text
    if command.source == "prompt":
        return str(command.target.render(argument))
    from hermes_core.mcp.tools import McpCallFailed

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


# -- what each built-in says back ----------------------------------------------------


def help_text(mode: str, model: str, extra: list[dict[str, Any]] | None = None) -> str:
    lines = [
        "**hermes** is a coding agent: it reads and edits files in this workspace, runs commands, "
        "and asks before doing anything the current mode does not allow.",
        "",
        f"Mode: `{mode}` · Model: `{model}`",
        "",
        "Commands:",
    ]
    lines += [_usage_line(command) for command in AVAILABLE_COMMANDS]
    if extra:
        lines += ["", "Skills and prompts (sent to the model as your message):"]
        lines += [_usage_line(command) for command in extra]
    lines += ["", "Modes:"]
    lines += [f"- `{mode_id}` — {description}" for mode_id, _, description in MODES]
    return "\n".join(lines)


def _usage_line(command: dict[str, Any]) -> str:
    hint = command.get("input", {}).get("hint")
    usage = f"/{command['name']}" + (f" <{hint}>" if hint else "")
    return f"- `{usage}` — {command['description']}"


def unknown_text(name: str) -> str:
    return (
        f"Unknown command `/{name}`; nothing was sent to the model. `/help` lists the commands. "
        "To send text that starts with a slash, put something before it."
    )


def command_failed_text(name: str, reason: str) -> str:
    return f"`/{name}` could not be run: {reason}"


def mode_text(new_mode: str | None, current: str, requested: str) -> str:
    if new_mode is not None:
        return f"Mode set to `{new_mode}`."
    valid = ", ".join(f"`{m}`" for m, _, _ in MODES)
    if not requested:
        return f"The mode is `{current}`. Choose one of {valid}: `/mode <name>`."
    return f"There is no mode `{requested}`; the mode stays `{current}`. Choose one of {valid}."


def model_text(new_model: str | None, current: str, offered: list[str], problem: str | None = None) -> str:
    if new_model is not None and problem is not None:
        listed = ", ".join(f"`{m}`" for m in offered[:12]) + (", …" if len(offered) > 12 else "")
        return f"The model stays `{current}`: {problem}. Offered: {listed}"
    if new_model is not None:
        return f"Model set to `{new_model}` for the next prompts."
    listed = "\n".join(f"- `{m}`" for m in offered)
    return f"The model is `{current}`. Switch with `/model <id>`; known models:\n{listed}"


def tools_text(tools: ToolRegistry, *, read_only: bool) -> str:
    offered = [tool for tool in tools if tool.read_only or not read_only]
    lines = [f"{len(offered)} tools" + (" (plan mode: read-only tools only)" if read_only else "") + ":"]
    for tool in offered:
        summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        lines.append(f"- `{tool.name}` — {summary}")
    return "\n".join(lines)


def context_text(used: int, window: int, messages: int) -> str:
    share = (100.0 * used / window) if window else 0.0
    return (
        f"Context: {used:,} of {window:,} tokens in use ({share:.1f}%), "
        f"{messages} message{'s' if messages != 1 else ''} in the conversation."
    )


def cost_text(total: Usage, cost_usd: float | None) -> str:
    lines = [
        f"Tokens this session: {total.input_tokens:,} in"
        f" ({total.cached_tokens:,} from the prompt cache), {total.output_tokens:,} out.",
    ]
    if total.reasoning_tokens:
        lines.append(f"Reasoning tokens: {total.reasoning_tokens:,}.")
    if cost_usd is None:
        lines.append("Cost: unknown (no price known for this model; set `prices` in config.toml).")
    else:
        lines.append(f"Cost: ${cost_usd:.4f}.")
    return "\n".join(lines)


def compact_text(before: int, after: int, changed: bool) -> str:
    if not changed:
        return "Nothing to compact: the conversation is still short enough to keep whole."
    return f"Compacted the conversation: {before} messages are now {after}, with a summary of the middle."


def queue_text(running: bool, waiting: list[str]) -> str:
    if not waiting:
        return "Nothing is waiting." + (" A turn is running." if running else "")
    lines = [f"{len(waiting)} prompt{'s' if len(waiting) != 1 else ''} waiting for the running turn:"]
    lines += [f"{number}. {preview}" for number, preview in enumerate(waiting, 1)]
    return "\n".join(lines)


def steer_text(added: bool) -> str:
    if added:
        return "Added to the running turn: the model reads it at its next step."
    return "Nothing to add it to: write what the agent should know after `/steer`."
