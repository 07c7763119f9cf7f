"""`session/prompt` and `session/cancel`: running one prompt turn of a session, agent
events to `session/update`, history to the store, cancel, errors, and the response with
the turn's token usage. This is everything of the session layer a plain prompt runs.

The turn runs in its own task so a `session/cancel` can cancel it while the prompt
request waits; a cancelled turn answers `stopReason: "cancelled"` and closes the tool
calls it left open. A prompt that arrives while a turn runs (or is still ending after a
cancel) waits in the session's queue and runs after it, answered when its own turn ends;
a cancel answers the prompts queued before it `cancelled` too (the user said stop), while
one sent after the cancel (Zed's "interrupt with a new message") runs. `/steer` and
`/queue` do not wait: they act on the running turn. A failing model provider ends the
turn normally with the error shown where the answer would be; anything else is a
JSON-RPC error. An update that background work sends while a turn runs is held and
goes out before that turn's response (`send_beside`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.channel import say, send_closing_updates
from hermes_acp.session.error_codes import error_response
from hermes_acp.session.errors import INVALID_PARAMS, not_found, protocol_error
from hermes_acp.session.records import close_cards
from hermes_acp.session.state import ClientProfile, QueuedPrompt, Session, Turn

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.slash.run import SlashCommands
    from hermes_core.models import Usage

log = logging.getLogger(__name__)

CANCELLED_NOTE = "Cancelled by the user."
BESIDE_THE_TURN = frozenset({"steer", "queue", "jobs"})  # commands that act on the running turn
PREVIEW_LENGTH = 80


class TurnRunner:
    def __init__(
        self,
        channel: ClientChannel,
        sessions: dict[str, Session],
        commands: SlashCommands,
        *,
        sdks_imported: asyncio.Event | None = None,
        client: ClientProfile | None = None,
    ) -> None:
        self.channel = channel
        self.sessions = sessions  # the manager's table of open sessions
        self.client = client  # shared with the server: filled in by `initialize`
        self.commands = commands
        # Awaited inside the turn before anything that may import a provider SDK.
        self._sdks_imported = sdks_imported

    async def prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        """session/prompt: run one turn to its end, after the turns before it; the response."""
        session = self.sessions.get(session_id)
        if session is None:
            raise not_found(session_id)
        before: list[Usage] = []  # the usage when this prompt's own turn starts
        result: dict[str, Any] = {"stopReason": await self._run(session, blocks, before)}
        turn_usage = prompt_usage(before[0], session.agent.conversation.usage) if before else None
        if turn_usage is not None:
            # `usage` is a draft field the stable schema does not allow: it goes in
            # `_meta` unless the client asked for the field (`_meta.hermes.promptUsage`).
            if self.client is not None and self.client.prompt_usage:
                result["usage"] = turn_usage
            else:
                result["_meta"] = {"hermes": {"usage": turn_usage}}
        return result

    def cancel(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:  # unknown: nothing to cancel
            _cancel(session)

    async def send_beside(
        self, session: Session, send: Callable[[], Awaitable[None]], *, unsolicited: bool = False
    ) -> None:
        """Send now, unless it could land after a prompt's response, which reads as part of
        a turn that already ended (acp-tck ACP-CANCEL-002). While a turn runs, it is held
        and sent before that turn's response. An unsolicited update (a background refresh,
        not the follow-up of a request just answered) is also held once the session was
        prompted, until the next turn: the client may be watching the prompt it just got
        an answer to."""
        if session.turn is None and not (unsolicited and session.prompted):
            await send()
            return
        log.debug("session %s: update held until its turn ends or the next one starts", session.id)
        session.held_updates.append(send)

    async def _run(self, session: Session, blocks: list[dict[str, Any]], before: list[Usage]) -> str:
        """The turn of one prompt, once its place in the queue comes; its stop reason.
        `before` gets the session's usage as the turn starts (not while it waited: the
        turns before it are not its tokens)."""
        command = _command(blocks)
        if command is not None and command[0] in BESIDE_THE_TURN and session.turn is not None:
            return await self.commands.beside_turn(session, *command)
        if not await _wait_for_place(session, blocks):
            return "cancelled"
        before.append(session.agent.conversation.usage)
        turn = Turn()
        session.turn = turn
        session.prompted = True
        try:
            await _send_held_updates(session)
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
                session.agent.switch_model(session.pending_model)
                session.pending_model = None
                await session.agent.close_retired()
            _wake_next(session)

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
        if self._sdks_imported is not None:
            await self._sdks_imported.wait()  # inside the turn: a cancel during the wait still counts
        command = _command(blocks)
        if command is not None:
            return await self.commands.run(session, *command, self.stream)
        from hermes_acp.bridge.content import prompt_to_content, with_prompt_shown
        from hermes_core.models import model_info

        try:
            content = await prompt_to_content(
                blocks, session.agent.workspace, accepts_images=model_info(session.agent.model).images
            )
        except ValueError as exc:
            raise protocol_error(INVALID_PARAMS, f"prompt: {exc}", {"field": "prompt"}) from exc
        events = with_prompt_shown(session.agent.run_turn(content), blocks)
        return await self.stream(session, _with_sandbox_notice(session, events))

    async def stream(self, session: Session, events: AsyncIterator[Any]) -> str:
        """Send a stream of agent events to the client and the store; the stop reason."""
        from hermes_core.events import HistoryReplaced, MessageCommitted, TitleChanged, TurnEnded
        from hermes_core.providers.base import ProviderError
        from hermes_core.store.writer import persist_message, replace_history, save_record, save_turn_state

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
            for params in session.translator.flush():
                await notify("session/update", params)
        except ProviderError as exc:
            # The editor shows the error where the answer would be, and the turn ends
            # normally: a JSON-RPC error would be shown as a crash of the agent.
            log.warning("session %s: the model provider failed: %s", session.id, exc)
            await send_closing_updates(self.channel, session.translator.flush())
            await close_cards(self.channel, session, f"Stopped: {exc}")
            text = f"\n\n**The model provider failed:** {exc}\n"
            # `_meta` lets a script's client (`hermes-acp run`) tell this from an answer.
            failure = {"hermes": {"turnError": {"kind": str(exc.kind), "message": str(exc)}}}
            await say(self.channel, session.id, text, failure)
            _record_turn_error(session, text)
        return stop

    async def _finish(self, session: Session, turn: Turn) -> str:
        from hermes_core.store.writer import persist_message

        assert turn.task is not None
        task = turn.task
        if task.cancelled() or turn.cancel_requested:
            if not task.cancelled() and task.exception() is not None:
                log.info("turn of %s ended with %r after a cancel", session.id, task.exception())
            interrupted = session.agent.conversation.take_interrupted()
            if interrupted is not None:
                persist_message(session, interrupted)
                await send_closing_updates(self.channel, session.translator.interrupted(interrupted.text))
            else:
                await send_closing_updates(self.channel, session.translator.flush())
            await close_cards(self.channel, session, CANCELLED_NOTE)
            await _end_of_turn(session)
            return "cancelled"
        error = task.exception()
        if error is None:
            await _end_of_turn(session)
            return task.result()
        await send_closing_updates(self.channel, session.translator.flush())
        await close_cards(self.channel, session, f"Stopped by an error: {error}")
        # Any acp import loads the SDK schema; this module loads before `initialize` is answered.
        from acp.exceptions import RequestError

        if not isinstance(error, RequestError):  # a bad request changed nothing worth keeping
            _record_turn_error(session, f"\n\n**The turn failed:** {type(error).__name__}: {error}\n")
        await _end_of_turn(session)
        if isinstance(error, RequestError):
            raise error
        log.error("turn of session %s failed", session.id, exc_info=error)
        raise error_response(error, "the turn failed: ", {"details": str(error)})


def _record_turn_error(session: Session, text: str) -> None:
    """Keep why the turn failed in its history, so a reloaded session shows it."""
    from hermes_core.store.writer import persist_message, turn_error_notice

    notice = turn_error_notice(text)
    session.agent.conversation.append(notice)
    persist_message(session, notice)


def _cancel(session: Session) -> None:
    _cancel_waiting(session)
    if session.turn is None:
        return  # idle: nothing to cancel, and nothing carries over
    session.turn.cancel_requested = True
    if session.turn.task is not None:
        session.turn.task.cancel()


async def _send_held_updates(session: Session) -> None:
    while session.held_updates:
        send = session.held_updates.pop(0)
        try:
            await send()
        except Exception:  # a notice that cannot be sent must not break the turn
            log.warning("session %s: a held update could not be sent", session.id, exc_info=True)


async def _end_of_turn(session: Session) -> None:
    """Before the prompt's response: nothing of the session may be sent after it."""
    from hermes_core.store.writer import save_turn_state

    save_turn_state(session)
    await _send_held_updates(session)
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
    if not _only_text(blocks):
        return None
    text = _plain_text(blocks)
    if not text.lstrip().startswith("/"):
        return None  # the common case, decided without the commands module
    from hermes_acp.session.slash.menu import parse_command

    return parse_command(text)


def _only_text(blocks: list[dict[str, Any]]) -> bool:
    return bool(blocks) and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks)


def _plain_text(blocks: list[dict[str, Any]]) -> str:
    return "".join(str(b.get("text", "")) for b in blocks)


async def _with_sandbox_notice(session: Session, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The turn's events, after a notice (once per session) when the command sandbox cannot start."""
    sandbox = getattr(session.agent.workspace, "sandbox", None)
    if sandbox is not None and (notice := sandbox.notice):
        sandbox.notice = None  # said once per session
        from hermes_core.events import Status

        yield Status("notice", notice)
    async for event in events:
        yield event


def prompt_usage(before: Usage, after: Usage) -> dict[str, int] | None:
    """`PromptResponse.usage`: the tokens this turn used; None when it made no model call."""
    inputs = after.input_tokens - before.input_tokens
    outputs = after.output_tokens - before.output_tokens
    if not inputs and not outputs:
        return None
    return {
        "totalTokens": inputs + outputs,
        "inputTokens": inputs,
        "outputTokens": outputs,
        "thoughtTokens": after.reasoning_tokens - before.reasoning_tokens,
        "cachedReadTokens": after.cached_tokens - before.cached_tokens,
        "cachedWriteTokens": after.cache_write_tokens - before.cache_write_tokens,
    }
