"""Running one prompt turn of a session: agent events to `session/update`, history to the
store, cancel, and errors.

The turn runs in its own task so a `session/cancel` can cancel it while the prompt
request waits; a cancelled turn answers `stopReason: "cancelled"` and closes the tool
calls it left open. A prompt that arrives while a turn runs (or is still ending after a
cancel) waits in the session's queue and runs after it, answered when its own turn ends;
a cancel answers the prompts queued before it `cancelled` too (the user said stop), while
one sent after the cancel (Zed's "interrupt with a new message") runs. `/steer` and
`/queue` do not wait: they act on the running turn. A failing model provider ends the
turn normally with the error shown where the answer would be; anything else is a
JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

from hermes_acp.bridge.channel import send_updates
from hermes_acp.session.errors import INVALID_PARAMS, error_response, protocol_error
from hermes_acp.session.records import (
    persist_message,
    record_turn_error,
    replace_history,
    save_record,
    save_turn_state,
)
from hermes_acp.session.state import QueuedPrompt, Session, Turn
from hermes_acp.session.updates import say

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.commands import SlashCommands

log = logging.getLogger(__name__)

CANCELLED_NOTE = "Cancelled by the user."
BESIDE_THE_TURN = frozenset({"steer", "queue"})  # commands that act on the running turn
PREVIEW_LENGTH = 80


class TurnRunner:
    def __init__(
        self,
        channel: ClientChannel,
        commands: SlashCommands,
        *,
        sdks_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.channel = channel
        self.commands = commands
        # Awaited inside the turn before anything that may import a provider SDK.
        self._sdks_ready = sdks_ready

    async def prompt(self, session: Session, blocks: list[dict[str, Any]]) -> str:
        """Run one turn to its end, after the turns before it; its stop reason."""
        command = _command(blocks)
        if command is not None and command[0] in BESIDE_THE_TURN and session.turn is not None:
            return await self.commands.beside_turn(session, *command)
        if not await _wait_for_place(session, blocks):
            return "cancelled"
        turn = Turn()
        session.turn = turn
        session.prompted = True
        try:
            await session.send_held_updates()
            turn.task = asyncio.create_task(self._turn(session, blocks), name=f"turn {session.id}")
            try:
                await asyncio.wait({turn.task})
            except asyncio.CancelledError:
                turn.task.cancel()
                raise
            return await self._finish(session, turn)
        finally:
            session.turn = None
            if session.pending_model is not None:
                session.agent.model = session.pending_model
                session.pending_model = None
                await session.agent.close_retired()
            _wake_next(session)

    @staticmethod
    def cancel(session: Session) -> None:
        _cancel_waiting(session)
        if session.turn is None:
            return  # idle: nothing to cancel, and nothing carries over
        session.turn.cancel_requested = True
        if session.turn.task is not None:
            session.turn.task.cancel()

    @staticmethod
    async def stop(session: Session) -> None:
        """Cancel the running turn, if any, and wait until its task has ended."""
        _cancel_waiting(session)
        turn = session.turn
        if turn is not None and turn.task is not None:
            turn.cancel_requested = True
            turn.task.cancel()
            await asyncio.wait({turn.task})

    async def _turn(self, session: Session, blocks: list[dict[str, Any]]) -> str:
        if self._sdks_ready is not None:
            await self._sdks_ready()  # inside the turn: a cancel during the wait still counts
        command = _command(blocks)
        if command is not None:
            return await self.commands.run(session, *command, self.stream)
        from core.models import model_info
        from hermes_acp.bridge.content import prompt_to_content

        try:
            content = await prompt_to_content(
                blocks, session.agent.workspace, accepts_images=model_info(session.agent.model).images
            )
        except ValueError as exc:
            raise protocol_error(INVALID_PARAMS, f"prompt: {exc}", {"field": "prompt"}) from exc
        return await self.stream(session, _with_sandbox_notice(session, session.agent.run_turn(content)))

    async def stream(self, session: Session, events: AsyncIterator[Any]) -> str:
        """Send a stream of agent events to the client and the store; the stop reason."""
        from core.events import HistoryReplaced, MessageCommitted, TitleChanged, TurnEnded
        from core.providers.base import ProviderError

        session.translator.start_turn()
        translate = session.translator.translate
        notify = self.channel.send_notification
        stop = "end_turn"
        try:
            async for event in events:
                kind = type(event)
                if kind is MessageCommitted:
                    persist_message(session, event.message)
                    if event.message.role == "tool":
                        # An "always" answer or a plan change came with this tool call: a
                        # killed server must not forget them with the turn unfinished.
                        save_turn_state(session)
                    continue
                if kind is TurnEnded:
                    stop = str(event.stop_reason)
                    continue
                if kind is HistoryReplaced:
                    replace_history(session, list(event.messages))
                elif kind is TitleChanged:
                    save_record(session, title=event.title, force=True)
                for params in translate(event):
                    await notify("session/update", params)
        except ProviderError as exc:
            # The editor shows the error where the answer would be, and the turn ends
            # normally: a JSON-RPC error would be shown as a crash of the agent.
            log.warning("session %s: the model provider failed: %s", session.id, exc)
            await send_updates(self.channel, session.translator.close_open_tool_calls(f"Stopped: {exc}"))
            text = f"\n\n**The model provider failed:** {exc}\n"
            # `_meta` lets a script's client (`hermes-acp run`) tell this from an answer.
            failure = {"hermes": {"turnError": {"kind": str(exc.kind), "message": str(exc)}}}
            await say(self.channel, session.id, text, failure)
            record_turn_error(session, text)
        return stop

    async def _finish(self, session: Session, turn: Turn) -> str:
        assert turn.task is not None
        task = turn.task
        if task.cancelled() or turn.cancel_requested:
            if not task.cancelled() and task.exception() is not None:
                log.info("turn of %s ended with %r after a cancel", session.id, task.exception())
            interrupted, session.agent.interrupted = session.agent.interrupted, None
            if interrupted is not None:
                persist_message(session, interrupted)
            await send_updates(self.channel, session.translator.close_open_tool_calls(CANCELLED_NOTE))
            await _end_of_turn(session)
            return "cancelled"
        error = task.exception()
        if error is None:
            await _end_of_turn(session)
            return task.result()
        await send_updates(
            self.channel, session.translator.close_open_tool_calls(f"Stopped by an error: {error}")
        )
        if not isinstance(error, RequestError):  # a bad request changed nothing worth keeping
            record_turn_error(session, f"\n\n**The turn failed:** {type(error).__name__}: {error}\n")
        await _end_of_turn(session)
        if isinstance(error, RequestError):
            raise error
        log.error("turn of session %s failed", session.id, exc_info=error)
        raise error_response(error, "the turn failed: ", {"details": str(error)})


async def _end_of_turn(session: Session) -> None:
    """Before the prompt's response: nothing of the session may be sent after it."""
    save_turn_state(session)
    await session.send_held_updates()
    await session.persister.flush()


async def _wait_for_place(session: Session, blocks: list[dict[str, Any]]) -> bool:
    """Wait until the turns before this prompt have ended; False when a cancel answered it."""
    if session.turn is None and not session.waiting:
        return True
    entry = QueuedPrompt(_preview(blocks))
    session.waiting.append(entry)
    runs = False
    try:
        await entry.ready.wait()
        runs = not entry.cancelled
    finally:
        session.waiting.remove(entry)
        if not runs:
            _wake_next(session)  # it gave up its place: the next one may run
    return runs


def _wake_next(session: Session) -> None:
    if session.turn is None and session.waiting:
        session.waiting[0].ready.set()


def _cancel_waiting(session: Session) -> None:
    for entry in session.waiting:
        entry.cancelled = True
        entry.ready.set()


def _preview(blocks: list[dict[str, Any]]) -> str:
    texts = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    text = " ".join(_plain_text(texts).split())
    if len(text) > PREVIEW_LENGTH:
        text = text[: PREVIEW_LENGTH - 1] + "…"
    return text or "(a prompt without text)"


def _command(blocks: list[dict[str, Any]]) -> tuple[str, str] | None:
    from hermes_acp.bridge.commands import parse_command

    return parse_command(_plain_text(blocks)) if _only_text(blocks) else None


def _only_text(blocks: list[dict[str, Any]]) -> bool:
    return bool(blocks) and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks)


def _plain_text(blocks: list[dict[str, Any]]) -> str:
    return "".join(str(b.get("text", "")) for b in blocks)


async def _with_sandbox_notice(session: Session, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The turn's events, after a notice (once per session) when the command sandbox cannot start."""
    sandbox = getattr(session.agent.workspace, "sandbox", None)
    notice = sandbox.take_notice() if sandbox is not None else None
    if notice:
        from core.events import Status

        yield Status("notice", notice)
    async for event in events:
        yield event
