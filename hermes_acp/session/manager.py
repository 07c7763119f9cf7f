"""ACP sessions: creating them, running one turn at a time, cancelling, options.

A `Session` owns everything one conversation needs (workspace, approver, agent, event
translator, persistence); the manager keeps the sessions of one connection and turns
protocol requests into calls on them. Heavy modules (the agent loop, provider SDKs,
SQLite) are imported on first use, so starting the server costs no more than the SDK.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

from hermes_acp.session import slash
from hermes_acp.session.options import (
    EFFORT_OPTION,
    MODE_IDS,
    MODE_OPTION,
    MODEL_OPTION,
    InvalidOption,
    OptionState,
    config_options,
    modes_state,
    parse_change,
)
from hermes_acp.session.persist import Persister

if TYPE_CHECKING:
    from core.agent import Agent
    from core.config import Settings
    from core.store import SessionRecord, SessionStore
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.bridge.events import EventTranslator

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = -32002
ALREADY_RUNNING = "a prompt is already running in this session; cancel it first"
CANCELLED_NOTE = "Cancelled by the user."
MODEL_LIST_TIMEOUT = 10.0
MODEL_LIST_RETRY_SECONDS = 300.0  # an endpoint without a model list is asked again after this
LIST_PAGE_SIZE = 50
FLUSH_TIMEOUT = 10.0

AfterResponse = Callable[[Callable[[], Any]], None]


@dataclass(slots=True)
class ClientProfile:
    """What the client said it can do in `initialize` (one per connection)."""

    read_file: bool = False
    write_file: bool = False
    terminal: bool = False
    terminal_auth: bool = False  # may be offered a `type: "terminal"` auth method
    terminal_meta: bool = False  # Zed's `_meta.terminal_output` convention

    @property
    def offers_workspace(self) -> bool:
        return self.read_file or self.write_file or self.terminal


@dataclass(slots=True)
class Turn:
    task: asyncio.Task[str] | None = None
    cancel_requested: bool = False


@dataclass(slots=True)
class Session:
    id: str
    cwd: str
    extra_dirs: list[str]
    agent: Agent
    translator: EventTranslator
    persister: Persister
    stored: bool = False  # the store has a record for it
    closed: bool = False  # closed, deleted or shut down: nothing more is written
    turn: Turn | None = None
    pending_model: str | None = None  # set during a turn; applied when it ends
    extra_models: list[str] = field(default_factory=list)  # picked with /model, not in any list
    created: float = field(default_factory=time.time)

    @property
    def model(self) -> str:
        return self.pending_model or self.agent.model


def protocol_error(code: int, message: str, data: Any = None) -> RequestError:
    return RequestError(code, message, data)


class SessionManager:
    def __init__(
        self,
        channel: ClientChannel,
        *,
        after_response: AfterResponse,
        client: ClientProfile | None = None,
        environ: dict[str, str] | None = None,
        sdks_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.channel = channel
        # Awaited before anything that may import a provider SDK (seconds of imports that
        # must not block the event loop): a turn, the model list.
        self._sdks_ready = sdks_ready
        self.client = client or ClientProfile()
        self._after_response = after_response
        self._environ = environ
        self._settings: Settings | None = None
        self._sessions: dict[str, Session] = {}
        self._store: SessionStore | None = None
        self._store_lock = asyncio.Lock()
        self._catalog = ModelCatalog()
        self._background: set[asyncio.Task[Any]] = set()

    # -- settings and credentials -------------------------------------------------------

    def load_settings(self) -> Settings:
        """Settings read afresh (the user may have run `hermes-acp setup` meanwhile)."""
        from core.config import ConfigError, load_settings

        try:
            self._settings = load_settings(self._environ)
        except ConfigError as exc:
            raise protocol_error(INTERNAL_ERROR, f"hermes-acp is misconfigured: {exc}") from exc
        return self._settings

    def require_credentials(self) -> Settings:
        from core.providers.resolve import has_credentials

        settings = self.load_settings()
        if not has_credentials(settings):
            raise protocol_error(AUTH_REQUIRED, auth_help(settings))
        return settings

    # -- session/new --------------------------------------------------------------------

    async def new_session(self, cwd: str, extra_dirs: list[str], mcp_servers: list[Any]) -> dict[str, Any]:
        cwd, extra_dirs = check_directories(cwd, extra_dirs)
        skip_mcp_servers(mcp_servers)
        settings = self.require_credentials()
        session_id = secrets.token_hex(16)
        session = await self._open_session(settings, session_id, cwd, extra_dirs)
        self._sessions[session_id] = session
        log.info("session %s started in %s", session_id, cwd)
        self._after_response(lambda: self._session_ready(session, settings))
        return {"sessionId": session_id, **self.session_state(session)}

    async def _open_session(
        self,
        settings: Settings,
        session_id: str,
        cwd: str,
        extra_dirs: list[str],
        *,
        record: SessionRecord | None = None,
        messages: list[Any] | None = None,
    ) -> Session:
        from core.approval import ApprovalMemory, Mode
        from hermes_acp.bridge.events import EventTranslator
        from hermes_acp.bridge.permissions import AcpApprover

        workspace = self._workspace(session_id, cwd, extra_dirs)
        approver = AcpApprover(self.channel, session_id)
        mode = Mode(record.mode if record and record.mode in MODE_IDS else settings.default_mode)

        def build() -> Agent:
            from core.agent import Agent

            agent = Agent(
                settings=settings,
                workspace=workspace,
                approver=approver,
                mode=mode,
                messages=messages,
                approvals=ApprovalMemory.from_dict(record.approvals) if record else None,
                title=record.title if record else None,
            )
            if record is not None:
                if record.model:
                    agent.model = record.model
                agent.reasoning_effort = record.reasoning_effort
            return agent

        agent = await asyncio.to_thread(build)
        if record is not None:
            _restore(agent, record)
        translator = EventTranslator(session_id, terminal_meta=self.client.terminal_meta, cwd=cwd)
        return Session(
            id=session_id,
            cwd=cwd,
            extra_dirs=extra_dirs,
            agent=agent,
            translator=translator,
            persister=Persister(session_id, self.store),
            stored=record is not None,
            created=record.created_at if record is not None else time.time(),
        )

    def _workspace(self, session_id: str, cwd: str, extra_dirs: list[str]) -> Any:
        from core.workspace import LocalWorkspace, WorkspaceScope

        scope = WorkspaceScope(Path(cwd), tuple(Path(d) for d in extra_dirs))
        local = LocalWorkspace(scope)
        if not self.client.offers_workspace:
            return local
        from hermes_acp.bridge.workspace import ClientWorkspace

        return ClientWorkspace(
            scope,
            self.channel,
            session_id,
            read=self.client.read_file,
            write=self.client.write_file,
            terminal=self.client.terminal,
            local=local,
        )

    async def _session_ready(self, session: Session, settings: Settings) -> None:
        """After the client knows the session id: the commands menu, then the endpoint's
        model list in the background."""
        from hermes_acp.bridge.commands import commands_update

        await self._notify(commands_update(session.id))
        self._spawn(self._refresh_models(session, settings))

    async def _refresh_models(self, session: Session, settings: Settings) -> None:
        before = self.options(session).offered_models()
        if self._sdks_ready is not None:
            await self._sdks_ready()
        await self._catalog.fetch(settings)
        if session.id in self._sessions and self.options(session).offered_models() != before:
            await self._notify_config(session)

    # -- session/load, resume, fork, list, close, delete ---------------------------------

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        extra_dirs: list[str],
        mcp_servers: list[Any],
        *,
        replay: bool,
    ) -> dict[str, Any]:
        """session/load (replay the history, then answer) or session/resume (no replay)."""
        cwd, extra_dirs = check_directories(cwd, extra_dirs)
        skip_mcp_servers(mcp_servers)
        settings = self.require_credentials()
        live = self._sessions.get(session_id)
        if live is not None:
            if live.turn is not None:
                raise protocol_error(INVALID_REQUEST, ALREADY_RUNNING, {"sessionId": session_id})
            await self._drop(live)
        session = await self._restore_session(settings, session_id, cwd, extra_dirs)
        if replay:
            from hermes_acp.session.replay import replay_updates

            agent = session.agent
            updates = replay_updates(
                session.translator,
                agent.messages,
                plan=agent.tool_state.plan,
                used_tokens=estimated_context(agent),
                context_window=agent.context_window,
                cost_usd=agent.cost_usd,
            )
            await self._send_all(updates)  # all of it before the response
            self._after_response(lambda: self._spawn(self._refresh_models(session, settings)))
        else:
            self._after_response(lambda: self._session_ready(session, settings))
        log.info("session %s %s in %s", session_id, "loaded" if replay else "resumed", cwd)
        return self.session_state(session)

    async def fork_session(
        self, session_id: str, cwd: str, extra_dirs: list[str], mcp_servers: list[Any]
    ) -> dict[str, Any]:
        """A new session with a copy of the history (the store keeps the lineage)."""
        cwd, extra_dirs = check_directories(cwd, extra_dirs)
        skip_mcp_servers(mcp_servers)
        settings = self.require_credentials()
        live = self._sessions.get(session_id)
        if live is not None:
            await live.persister.flush()
        store = await self.store()
        new_id = secrets.token_hex(16)
        try:
            await asyncio.to_thread(store.fork_session, session_id, new_id, cwd=cwd)
        except KeyError:
            raise self._not_found(session_id) from None
        if extra_dirs:
            await asyncio.to_thread(store.update_session, new_id, extra_dirs=extra_dirs)
        session = await self._restore_session(settings, new_id, cwd, extra_dirs)
        self._after_response(lambda: self._session_ready(session, settings))
        log.info("session %s forked from %s", new_id, session_id)
        return {"sessionId": new_id, **self.session_state(session)}

    async def _restore_session(
        self, settings: Settings, session_id: str, cwd: str, extra_dirs: list[str]
    ) -> Session:
        store = await self.store()
        record = await asyncio.to_thread(store.get_session, session_id)
        if record is None:
            raise self._not_found(session_id)
        messages = await asyncio.to_thread(store.load_messages, session_id)
        extra_dirs = extra_dirs or _existing_dirs(record.extra_dirs)
        session = await self._open_session(
            settings, session_id, cwd, extra_dirs, record=record, messages=messages
        )
        if (record.cwd, record.extra_dirs) != (cwd, extra_dirs):
            self._save_record(session, cwd=cwd, extra_dirs=extra_dirs)
        self._sessions[session_id] = session
        return session

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> dict[str, Any]:
        for session in list(self._sessions.values()):
            await session.persister.flush()  # what is open is listed as it is now
        store = await self.store()
        try:
            records, next_cursor = await asyncio.to_thread(
                store.list_sessions, cwd=cwd, cursor=cursor, limit=LIST_PAGE_SIZE
            )
        except ValueError as exc:
            raise protocol_error(INVALID_PARAMS, f"cursor: {exc}", {"field": "cursor"}) from exc
        result: dict[str, Any] = {"sessions": [_session_info(record) for record in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def close_session(self, session_id: str) -> dict[str, Any]:
        """Stop the session's turn and free what it holds; its history stays stored."""
        session = self.get(session_id)
        await self._drop(session)
        log.info("session %s closed", session_id)
        return {}

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        live = self._sessions.get(session_id)
        if live is not None:
            await self._drop(live)
        store = await self.store()
        deleted = await asyncio.to_thread(store.delete_session, session_id)
        if not deleted and live is None:
            raise self._not_found(session_id)
        log.info("session %s deleted", session_id)
        return {}

    async def _drop(self, session: Session) -> None:
        """Cancel a running turn, write what is pending, release the agent's resources."""
        self._sessions.pop(session.id, None)
        turn = session.turn
        if turn is not None and turn.task is not None:
            turn.cancel_requested = True
            turn.task.cancel()
            await asyncio.wait({turn.task})
        self._save_turn_state(session)
        session.closed = True  # the prompt handler, finishing after us, writes nothing more
        try:
            await asyncio.wait_for(session.persister.flush(), FLUSH_TIMEOUT)
        except TimeoutError:
            log.error("session %s: pending writes did not finish", session.id)
        await _quietly(session.agent.aclose())

    def _not_found(self, session_id: str) -> RequestError:
        return protocol_error(SESSION_NOT_FOUND, f"unknown session {session_id!r}", {"sessionId": session_id})

    # -- state ----------------------------------------------------------------------------

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise protocol_error(
                SESSION_NOT_FOUND, f"unknown session {session_id!r}", {"sessionId": session_id}
            )
        return session

    def options(self, session: Session) -> OptionState:
        settings = session.agent.settings
        model = session.model
        return OptionState(
            mode=session.agent.mode.value,
            model=model,
            reasoning_effort=session.agent.reasoning_effort,
            models=[settings.model, *settings.models, *session.extra_models, *self._catalog.known(settings)],
            reasoning=model_takes_effort(model),
        )

    def session_state(self, session: Session) -> dict[str, Any]:
        """`modes` and `configOptions`, as session/new, load and resume answer them."""
        return {
            "modes": modes_state(session.agent.mode.value),
            "configOptions": config_options(self.options(session)),
        }

    # -- modes and config options --------------------------------------------------------

    async def set_mode(self, session_id: str, mode_id: str) -> dict[str, Any]:
        session = self.get(session_id)
        if mode_id not in MODE_IDS:
            valid = ", ".join(repr(m) for m in MODE_IDS)
            raise protocol_error(
                INVALID_PARAMS,
                f"unknown modeId {mode_id!r}; valid modes: {valid}",
                {"field": "modeId", "valid": list(MODE_IDS)},
            )
        self._apply_mode(session, mode_id)

        async def announce() -> None:
            await self._notify_mode(session)
            await self._notify_config(session)

        self._after_response(announce)
        return {}

    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> dict[str, Any]:
        session = self.get(session_id)
        try:
            config_id, new_value = parse_change(self.options(session), config_id, value)
        except InvalidOption as exc:
            raise protocol_error(INVALID_PARAMS, str(exc), {"field": exc.field}) from exc
        if config_id == MODE_OPTION:
            assert new_value is not None
            self._apply_mode(session, new_value)
            self._after_response(lambda: self._notify_mode(session))
        elif config_id == MODEL_OPTION:
            assert new_value is not None
            self._apply_model(session, new_value)
        elif config_id == EFFORT_OPTION:
            session.agent.reasoning_effort = new_value
            self._save_record(session, reasoning_effort=new_value)
        return {"configOptions": config_options(self.options(session))}

    def _apply_mode(self, session: Session, mode_id: str) -> None:
        from core.approval import Mode

        session.agent.mode = Mode(mode_id)
        self._save_record(session, mode=mode_id)

    def _apply_model(self, session: Session, model: str) -> None:
        if session.turn is not None:
            # The running turn keeps its provider chain; the next one gets the new model.
            session.pending_model = model
        else:
            session.agent.model = model
            session.pending_model = None
        if not model_takes_effort(model):
            session.agent.reasoning_effort = None
        self._save_record(session, model=model, reasoning_effort=session.agent.reasoning_effort)

    async def _notify_mode(self, session: Session) -> None:
        await self._update(
            session, {"sessionUpdate": "current_mode_update", "currentModeId": session.agent.mode.value}
        )

    async def _notify_config(self, session: Session) -> None:
        await self._update(
            session,
            {"sessionUpdate": "config_option_update", "configOptions": config_options(self.options(session))},
        )

    # -- prompt and cancel ----------------------------------------------------------------

    async def prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        session = self.get(session_id)
        if session.turn is not None:
            raise protocol_error(INVALID_REQUEST, ALREADY_RUNNING, {"sessionId": session_id})
        turn = Turn()
        session.turn = turn
        try:
            turn.task = asyncio.create_task(self._turn(session, blocks), name=f"turn {session_id}")
            try:
                await asyncio.wait({turn.task})
            except asyncio.CancelledError:
                turn.task.cancel()
                raise
            stop = await self._finish_turn(session, turn)
        finally:
            session.turn = None
            if session.pending_model is not None:
                session.agent.model = session.pending_model
                session.pending_model = None
        return {"stopReason": stop}

    def cancel(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.turn is None:
            return  # idle (or unknown): nothing to cancel, and nothing carries over
        session.turn.cancel_requested = True
        if session.turn.task is not None:
            session.turn.task.cancel()

    async def _finish_turn(self, session: Session, turn: Turn) -> str:
        assert turn.task is not None
        task = turn.task
        if task.cancelled() or turn.cancel_requested:
            if not task.cancelled() and task.exception() is not None:
                log.info("turn of %s ended with %r after a cancel", session.id, task.exception())
            await self._send_all(session.translator.close_open_tool_calls(CANCELLED_NOTE))
            await self._end_of_turn(session)
            return "cancelled"
        error = task.exception()
        if error is None:
            await self._end_of_turn(session)
            return task.result()
        await self._send_all(session.translator.close_open_tool_calls(f"Stopped by an error: {error}"))
        await self._end_of_turn(session)
        if isinstance(error, RequestError):
            raise error
        log.error("turn of session %s failed", session.id, exc_info=error)
        raise protocol_error(INTERNAL_ERROR, f"the turn failed: {error}", {"details": str(error)})

    async def _end_of_turn(self, session: Session) -> None:
        self._save_turn_state(session)
        await session.persister.flush()

    def _save_turn_state(self, session: Session) -> None:
        """What a turn changes besides the history: usage, cost, "always" answers, the plan."""
        if not session.stored:
            return
        agent = session.agent
        total = agent.usage_total
        self._save_record(
            session,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
            cached_tokens=total.cached_tokens,
            cost_usd=agent.cost_usd,
            approvals=agent.approvals.to_dict(),
            plan=[_plan_entry(e) for e in agent.tool_state.plan],
        )

    async def _turn(self, session: Session, blocks: list[dict[str, Any]]) -> str:
        if self._sdks_ready is not None:
            await self._sdks_ready()  # inside the turn: a cancel during the wait still counts
        from hermes_acp.bridge.commands import parse_command

        command = parse_command(_plain_text(blocks)) if _only_text(blocks) else None
        if command is not None:
            return await self._command(session, *command)
        from core.models import model_info
        from hermes_acp.bridge.content import prompt_to_content

        try:
            content = await prompt_to_content(
                blocks, session.agent.workspace, accepts_images=model_info(session.agent.model).images
            )
        except ValueError as exc:
            raise protocol_error(INVALID_PARAMS, f"prompt: {exc}", {"field": "prompt"}) from exc
        return await self._run_agent(session, session.agent.run_turn(content))

    async def _run_agent(self, session: Session, events: Any) -> str:
        """Send a stream of agent events to the client and the store; the stop reason."""
        from core.events import HistoryReplaced, MessageCommitted, TitleChanged, TurnEnded
        from core.providers.base import ProviderError

        translate = session.translator.translate
        notify = self.channel.send_notification
        stop = "end_turn"
        try:
            async for event in events:
                kind = type(event)
                if kind is MessageCommitted:
                    self._persist_message(session, event.message)
                    continue
                if kind is TurnEnded:
                    stop = str(event.stop_reason)
                    continue
                if kind is HistoryReplaced:
                    history = list(event.messages)
                    self._persist(session, lambda store, h=history: store.replace_messages(session.id, h))
                elif kind is TitleChanged:
                    self._save_record(session, title=event.title, force=True)
                for params in translate(event):
                    await notify("session/update", params)
        except ProviderError as exc:
            # The editor shows the error where the answer would be, and the turn ends
            # normally: a JSON-RPC error would be shown as a crash of the agent.
            log.warning("session %s: the model provider failed: %s", session.id, exc)
            await self._send_all(session.translator.close_open_tool_calls(f"Stopped: {exc}"))
            await self._say(session, f"\n\n**The model provider failed:** {exc}\n")
        return stop

    # -- slash commands --------------------------------------------------------------------

    async def _command(self, session: Session, name: str, argument: str) -> str:
        agent = session.agent
        if name == "help":
            await self._say(session, slash.help_text(agent.mode.value, session.model))
        elif name == "mode":
            new_mode = argument if argument in MODE_IDS else None
            if new_mode is not None:
                self._apply_mode(session, new_mode)
                await self._notify_mode(session)
                await self._notify_config(session)
            await self._say(session, slash.mode_text(new_mode, agent.mode.value, argument))
        elif name == "model":
            new_model = argument.split()[0] if argument else None
            if new_model is not None:
                if new_model not in self.options(session).offered_models():
                    session.extra_models.append(new_model)
                self._apply_model(session, new_model)
                await self._notify_config(session)
            await self._say(
                session, slash.model_text(new_model, session.model, self.options(session).offered_models())
            )
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
            self._persist(session, lambda store: store.replace_messages(session.id, []))
            await self._say(session, slash.CLEARED)
        elif name == "compact":
            before = list(agent.messages)
            if before:
                await self._run_agent(session, agent.compact())
            await self._say(
                session, slash.compact_text(len(before), len(agent.messages), agent.messages != before)
            )
        return "end_turn"

    async def _say(self, session: Session, text: str) -> None:
        await self._update(
            session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        )

    # -- persistence --------------------------------------------------------------------------

    async def store(self) -> SessionStore:
        if self._store is None:
            async with self._store_lock:
                if self._store is None:
                    from core.store import SessionStore

                    path = (self._settings or self.load_settings()).db_path
                    self._store = await asyncio.to_thread(SessionStore, path)
        return self._store

    def _persist(self, session: Session, write: Callable[[SessionStore], Any]) -> None:
        if session.closed:
            return
        if not session.stored:
            record = self._record(session)
            session.stored = True
            session.persister.submit(lambda store: store.create_session(record))
        session.persister.submit(write)

    def _persist_message(self, session: Session, message: Any) -> None:
        self._persist(session, lambda store: store.append_message(session.id, message))

    def _save_record(self, session: Session, *, force: bool = False, **fields: Any) -> None:
        """Record fields changed. A session not stored yet gets them when it is created
        (with its first message), unless `force`."""
        if session.closed:
            return
        if session.stored:
            session.persister.submit(lambda store: store.update_session(session.id, **fields))
        elif force:
            self._persist(session, lambda store: store.update_session(session.id, **fields))

    def _record(self, session: Session) -> SessionRecord:
        from core.store import SessionRecord

        agent = session.agent
        return SessionRecord(
            id=session.id,
            cwd=session.cwd,
            extra_dirs=list(session.extra_dirs),
            title=getattr(agent, "title", None),
            created_at=session.created,
            mode=agent.mode.value,
            model=session.model,
            reasoning_effort=agent.reasoning_effort,
            approvals=agent.approvals.to_dict(),
        )

    # -- plumbing ------------------------------------------------------------------------------

    async def _update(self, session: Session, update: dict[str, Any]) -> None:
        await self._notify({"sessionId": session.id, "update": update})

    async def _notify(self, params: dict[str, Any]) -> None:
        await self.channel.send_notification("session/update", params)

    async def _send_all(self, updates: Iterable[dict[str, Any]]) -> None:
        for params in updates:
            await self.channel.send_notification("session/update", params)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def shutdown(self) -> None:
        """Input closed: cancel running turns, write what is pending, close the store."""
        for task in list(self._background):
            task.cancel()
        sessions = list(self._sessions.values())
        if sessions:
            await asyncio.gather(*(self._drop(session) for session in sessions))
        if self._store is not None:
            await asyncio.to_thread(self._store.close)
            self._store = None


class ModelCatalog:
    """The endpoint's model list, fetched once per endpoint and shared by its sessions.
    An endpoint that gave no list is asked again only after a while."""

    def __init__(self, retry_after: float = MODEL_LIST_RETRY_SECONDS) -> None:
        self._lists: dict[tuple[str, ...], tuple[list[str], float]] = {}
        self._fetching: dict[tuple[str, ...], asyncio.Task[list[str]]] = {}
        self._retry_after = retry_after

    @staticmethod
    def _key(settings: Settings) -> tuple[str, ...]:
        return (
            settings.provider,
            settings.base_url or "",
            settings.openai_base_url or "",
            settings.anthropic_base_url or "",
        )

    def known(self, settings: Settings) -> list[str]:
        return self._lists.get(self._key(settings), ([], 0.0))[0]

    async def fetch(self, settings: Settings) -> list[str]:
        key = self._key(settings)
        cached = self._lists.get(key)
        if cached is not None and (cached[0] or time.monotonic() - cached[1] < self._retry_after):
            return cached[0]
        task = self._fetching.get(key)
        if task is None:
            task = self._fetching[key] = asyncio.create_task(_list_models(settings))
        try:
            models = await asyncio.shield(task)
        finally:
            if task.done():
                self._fetching.pop(key, None)
        self._lists[key] = (models, time.monotonic())
        return models


async def _list_models(settings: Settings) -> list[str]:
    from core.providers.resolve import build_chain

    provider = None
    try:
        provider = build_chain(settings)[0]
        models = await asyncio.wait_for(provider.list_models(), MODEL_LIST_TIMEOUT)
        return [m for m in models if isinstance(m, str) and m]
    except Exception as exc:  # a missing list is normal (many endpoints have none)
        log.info("no model list from the endpoint: %s", exc)
        return []
    finally:
        if provider is not None:
            await _quietly(provider.aclose())


# -- helpers ------------------------------------------------------------------------------------


def check_directories(cwd: str, extra_dirs: Iterable[str]) -> tuple[str, list[str]]:
    """cwd and additionalDirectories must be absolute paths of existing directories."""
    _check_directory("cwd", cwd)
    extra = list(extra_dirs or [])
    for index, path in enumerate(extra):
        _check_directory(f"additionalDirectories[{index}]", path)
    return cwd, extra


def _check_directory(field_name: str, path: str) -> None:
    if not Path(path).is_absolute():
        raise protocol_error(
            INVALID_PARAMS,
            f"{field_name} must be an absolute path; got {path!r}",
            {"field": field_name, "path": path},
        )
    if not Path(path).is_dir():
        what = "does not exist" if not Path(path).exists() else "is not a directory"
        raise protocol_error(
            INVALID_PARAMS,
            f"{field_name} must be an existing directory; {path!r} {what}",
            {"field": field_name, "path": path},
        )


def skip_mcp_servers(servers: Iterable[Any]) -> None:
    names = [getattr(server, "name", "?") for server in servers or ()]
    if names:
        log.info("MCP servers are not supported yet; skipping %d: %s", len(names), ", ".join(names))


def model_takes_effort(model: str) -> bool:
    from core.models import model_info

    return model_info(model).reasoning in ("effort", "thinking")


def auth_help(settings: Settings) -> str:
    return (
        "No API key configured for hermes-acp. Run `hermes-acp setup` in a terminal, or set "
        "OPENAI_API_KEY (or ANTHROPIC_API_KEY / OPENROUTER_API_KEY, or HERMES_ACP_API_KEY with "
        f"HERMES_ACP_BASE_URL for another endpoint) in the environment or in {settings.config_path}."
    )


def _restore(agent: Agent, record: SessionRecord) -> None:
    """What the record remembers beyond the history: usage, cost, the plan."""
    from core.events import PlanEntry, Usage

    agent.usage_total = Usage(
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cached_tokens=record.cached_tokens,
    )
    agent.cost_usd = record.cost_usd
    entries = []
    for item in record.plan or []:
        try:
            entries.append(
                PlanEntry(item["content"], item.get("status", "pending"), item.get("priority", "medium"))
            )
        except (KeyError, TypeError):
            log.warning("session %s: skipping a malformed plan entry %r", record.id, item)
    agent.tool_state.plan = tuple(entries)
    agent.context_tokens = estimated_context(agent)


def _existing_dirs(paths: Iterable[str]) -> list[str]:
    return [path for path in paths if Path(path).is_dir()]


def estimated_context(agent: Agent) -> int:
    from core.context import estimate_messages_tokens

    return estimate_messages_tokens(agent.system_prompt, agent.messages, agent.tools.specs())


def _session_info(record: SessionRecord) -> dict[str, Any]:
    from datetime import UTC, datetime

    info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd}
    if record.extra_dirs:
        info["additionalDirectories"] = list(record.extra_dirs)
    if record.title:
        info["title"] = record.title
    if record.updated_at:
        stamp = datetime.fromtimestamp(record.updated_at, UTC).isoformat(timespec="milliseconds")
        info["updatedAt"] = stamp.replace("+00:00", "Z")
    return info


def _only_text(blocks: list[dict[str, Any]]) -> bool:
    return bool(blocks) and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks)


def _plain_text(blocks: list[dict[str, Any]]) -> str:
    return "".join(str(b.get("text", "")) for b in blocks)


def _plan_entry(entry: Any) -> dict[str, Any]:
    return {"content": entry.content, "status": entry.status, "priority": entry.priority}


async def _quietly(awaitable: Any) -> None:
    try:
        await awaitable
    except Exception:
        log.debug("cleanup step failed", exc_info=True)
