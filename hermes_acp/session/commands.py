"""Running a slash command typed as a prompt: the change it makes and the answer it gives.

The texts are in `slash`; parsing and the commands menu are in `bridge.commands`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.commands import COMMAND_NAMES
from hermes_acp.session import slash
from hermes_acp.session.custom_commands import command_message, menu_entries, session_commands
from hermes_acp.session.options import MODE_IDS
from hermes_acp.session.updates import say

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.controls import SessionControls
    from hermes_acp.session.state import Session

log = logging.getLogger(__name__)

# Sends a stream of agent events to the client and the store (the turn's own path).
StreamEvents = Callable[["Session", AsyncIterator[Any]], Awaitable[str]]


class SlashCommands:
    def __init__(self, channel: ClientChannel, controls: SessionControls) -> None:
        self.channel = channel
        self.controls = controls

    async def run(self, session: Session, name: str, argument: str, stream: StreamEvents) -> str:
        """Run one command; the turn's stop reason."""
        from core.store.sessions import replace_history

        agent = session.agent
        controls = self.controls
        if name not in COMMAND_NAMES:
            return await self._run_custom(session, name, argument, stream)
        if name == "help":
            extra = await asyncio.to_thread(menu_entries, session)
            await self._say(session, slash.help_text(agent.mode.value, session.model, extra))
        elif name == "mode":
            new_mode = argument if argument in MODE_IDS else None
            if new_mode is not None:
                controls.apply_mode(session, new_mode)
                await controls.notify_mode(session)
                await controls.notify_config(session)
            await self._say(session, slash.mode_text(new_mode, agent.mode.value, argument))
        elif name == "model":
            new_model = argument.split()[0] if argument else None
            if new_model is not None:
                if new_model not in controls.options(session).offered_models():
                    session.extra_models.append(new_model)
                controls.apply_model(session, new_model)
                await controls.notify_config(session)
            offered = controls.options(session).offered_models()
            await self._say(session, slash.model_text(new_model, session.model, offered))
        elif name == "tools":
            await self._say(session, slash.tools_text(agent.tools, read_only=agent.mode.value == "plan"))
        elif name == "context":
            await self._say(
                session, slash.context_text(agent.context_tokens, agent.context_window, len(agent.messages))
            )
        elif name == "cost":
            await self._say(session, slash.cost_text(agent.usage_total, agent.cost_usd))
        elif name == "clear":
            agent.messages = []
            agent.context_tokens = 0
            replace_history(session, [])
            await self._say(session, slash.CLEARED)
        elif name == "steer":
            if argument:  # no turn runs: the text is the prompt
                return await stream(session, agent.run_turn(argument))
            await self._say(session, slash.steer_text(False))
        elif name == "queue":
            await self._say(session, slash.queue_text(False, []))
        elif name == "compact":
            before = list(agent.messages)
            if before:
                await stream(session, agent.compact())
            await self._say(
                session, slash.compact_text(len(before), len(agent.messages), agent.messages != before)
            )
        return "end_turn"

    async def _run_custom(self, session: Session, name: str, argument: str, stream: StreamEvents) -> str:
        """A skill, prompt command or MCP prompt: its text goes to the model as the user's
        message. An unknown name is answered here and never reaches the model."""
        from core.mcp_tools import McpCallFailed
        from core.messages import TextPart
        from core.skills import SkillError

        command = (await asyncio.to_thread(session_commands, session)).get(name)
        if command is None:
            await self._say(session, slash.unknown_text(name))
            return "end_turn"
        try:
            text = await command_message(session, command, argument)
        except (McpCallFailed, SkillError, OSError, UnicodeDecodeError) as exc:
            log.warning("session %s: /%s failed: %s", session.id, name, exc)
            await self._say(session, slash.command_failed_text(name, str(exc)))
            return "end_turn"
        return await stream(session, session.agent.run_turn([TextPart(text)]))

    async def beside_turn(self, session: Session, name: str, argument: str) -> str:
        """`/steer` and `/queue` while a turn runs: they act on it instead of waiting for it."""
        if name == "steer":
            if argument:
                session.agent.steer(argument)
            await self._say(session, slash.steer_text(bool(argument)))
        else:
            waiting = [entry.preview for entry in session.waiting if not entry.cancelled]
            await self._say(session, slash.queue_text(session.turn is not None, waiting))
        return "end_turn"

    async def _say(self, session: Session, text: str) -> None:
        await say(self.channel, session.id, text)
