"""The sessions of one connection: the table, and the lifecycle requests that change it
(new, load, resume, fork, list, close, delete), with mode and model changes.

Building a session is `factory`; `session/prompt` and `session/cancel` go straight to
`turn`, which shares this table; the options are `options`, the store side `records` and
`persist`. Heavy modules (the agent loop, provider SDKs, SQLite, the MCP SDK) are
imported on first use, so starting the server costs no more than the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.channel import say, send_updates
from hermes_acp.session.error_codes import error_response
from hermes_acp.session.errors import (
    ALREADY_RUNNING,
    AUTH_REQUIRED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    auth_help,
    not_found,
    protocol_error,
    user_error,
)
from hermes_acp.session.factory import Placement, SessionFactory, check_directories
from hermes_acp.session.mcp_servers import problems_note
from hermes_acp.session.options import (
    MODE_OPTION,
    MODEL_OPTION,
    ModelCatalog,
    SessionControls,
    config_options,
)
from hermes_acp.session.records import SharedStore, existing_dirs, session_info
from hermes_acp.session.slash.run import SlashCommands
from hermes_acp.session.state import ClientProfile, Session
from hermes_acp.session.turn import TurnRunner

if TYPE_CHECKING:
    from acp.exceptions import RequestError

    from hermes_acp.bridge.channel import ClientChannel
    from hermes_core.config import Settings
    from hermes_core.store.sessions import SessionStore
    from hermes_core.store.writer import SessionRecord

log = logging.getLogger(__name__)

LIST_PAGE_SIZE = 50
FLUSH_TIMEOUT = 10.0

AfterResponse = Callable[[Callable[[], Any]], None]


class SessionManager:
    def __init__(
        self,
        channel: ClientChannel,
        *,
        after_response: AfterResponse,
        client: ClientProfile | None = None,
        environ: dict[str, str] | None = None,
        sdks_imported: asyncio.Event | None = None,
    ) -> None:
        self.channel = channel
        # Awaited before anything that may import a provider SDK (seconds of imports that
        # must not block the event loop): a turn, the model list.
        self._sdks_imported = sdks_imported
        self.client = client or ClientProfile()
        self._after_response = after_response
        self._environ = environ
        self._settings: Settings | None = None
        self._sessions: dict[str, Session] = {}
        self._store = SharedStore(lambda: (self._settings or self.load_settings()).db_path)
        self._catalog = ModelCatalog()
        self.controls = SessionControls(channel, self._catalog, self.client)
        self.factory = SessionFactory(channel, self.client, self._store)
        self.turns = TurnRunner(
            channel,
            self._sessions,
            SlashCommands(channel, self.controls),
            sdks_imported=sdks_imported,
            client=self.client,
        )
        self._background: set[asyncio.Task[Any]] = set()
        # One lifecycle change of a session id at a time (load, resume, close, delete): two
        # loads in flight together would each open the session, and one would leak with its
        # watcher, provider clients and MCP servers.
        self._lifecycle: dict[str, tuple[asyncio.Lock, int]] = {}

    # -- settings and credentials -------------------------------------------------------

    def load_settings(self) -> Settings:
        """Settings read afresh (the user may have run `hermes-acp setup` meanwhile)."""
        from hermes_core.config import ConfigError, load_settings

        try:
            self._settings = load_settings(self._environ)
        except ConfigError as exc:
            raise error_response(exc, "hermes-acp is misconfigured: ") from exc
        return self._settings

    def require_credentials(self) -> Settings:
        from hermes_core.providers.resolve import has_credentials

        settings = self.load_settings()
        if not has_credentials(settings):
            raise user_error(AUTH_REQUIRED, auth_help(settings))
        return settings

    async def store(self) -> SessionStore:
        return await self._store.get()

    # -- session/new --------------------------------------------------------------------

    async def new_session(self, place: Placement) -> dict[str, Any]:
        check_directories(place)
        settings = self.require_credentials()
        session_id = secrets.token_hex(16)
        session = await self._open_new(settings, session_id, place)
        self._after_response(lambda: self._session_ready(session, settings))
        return {"sessionId": session_id, **self.session_state(session)}

    async def open_answered(self, session_id: str, place: Placement, answer: dict[str, Any]) -> None:
        """A session/new answered before the server existed (hermes_acp/startup/): built
        and stored now, as `new_session` does before its answer; then what follows one."""
        settings = self.require_credentials()
        session = await self._open_new(settings, session_id, place)
        if {"sessionId": session_id, **self.session_state(session)} != answer:
            # The answer said otherwise (the cached model list changed meanwhile): the
            # client hears the session's real state before anything else of it.
            async def correct() -> None:
                await self.controls.notify_mode(session)
                await self.controls.notify_config(session)

            await self.turns.send_beside(session, correct)
        # The menu and the model list: beside the requests, which wait for the session only.
        self._spawn(self._session_ready(session, settings))

    async def _open_new(self, settings: Settings, session_id: str, place: Placement) -> Session:
        session = await self.factory.open(settings, session_id, place)
        self._report_job_ends(session)
        self._sessions[session_id] = session
        from hermes_core.store.writer import store_session

        store_session(session)
        log.info("session %s started in %s", session_id, place.cwd)
        return session

    async def _session_ready(self, session: Session, settings: Settings) -> None:
        """After the client knows the session id: the commands menu, what went wrong with
        its MCP servers, then the endpoint's model list in the background."""
        from hermes_acp.session.slash.menu import session_menu

        async def announce() -> None:
            menu, _ = await session_menu(session)
            await self._notify(menu)
            await self._report_mcp_problems(session)

        await self.turns.send_beside(session, announce)
        self._spawn(self._refresh_models(session, settings))

    async def _announce_custom_commands(self, session: Session) -> None:
        """The replayed menu has the built-ins; the session's skills and prompts follow."""
        from hermes_acp.session.slash.menu import session_menu

        menu, custom = await session_menu(session)
        if custom:
            await self._notify(menu)

    async def _report_mcp_problems(self, session: Session) -> None:
        if session.mcp_problems:
            await say(self.channel, session.id, problems_note(session.mcp_problems))

    async def _refresh_models(self, session: Session, settings: Settings) -> None:
        before = self.controls.options(session).offered_models()
        if self._sdks_imported is not None:
            await self._sdks_imported.wait()
        await self._catalog.fetch(settings)
        if self._sessions.get(session.id) is not session:
            return  # closed, or opened again by a later load (that one refreshes itself)
        if self.controls.options(session).offered_models() != before:
            await self.turns.send_beside(
                session, lambda: self.controls.notify_config(session), unsolicited=True
            )

    # -- session/load, resume, fork, list, close, delete ---------------------------------

    async def load_session(self, session_id: str, place: Placement, *, replay: bool) -> dict[str, Any]:
        """session/load (replay the history, then answer) or session/resume (no replay).

        A second load or resume of the id while one is in flight waits for it, then does
        what a load of an open session does: closes it and opens it again with its own
        cwd and MCP servers, and (load) replays the whole history before it answers."""
        async with self._owning(session_id):
            return await self._load_session(session_id, place, replay=replay)

    async def _load_session(self, session_id: str, place: Placement, *, replay: bool) -> dict[str, Any]:
        check_directories(place)
        settings = self.require_credentials()
        live = self._sessions.get(session_id)
        if live is not None:
            if live.turn is not None:
                raise protocol_error(INVALID_REQUEST, ALREADY_RUNNING, {"sessionId": session_id})
            if not (live.prompted or live.agent.messages):  # no history to restore: it stays as it is
                self._after_response(lambda: self._session_ready(live, settings))
                return self.session_state(live)
            await self._drop(live)
        session, record = await self._restore_session(settings, session_id, place)
        if replay:
            from hermes_acp.session.replay import replay_updates

            agent = session.agent
            transcript = agent.messages
            if record.parent_id is not None:  # compressed: the user saw what came before the summary
                store = await self.store()
                transcript = await asyncio.to_thread(store.load_transcript, session_id)
            updates = replay_updates(
                session.translator,
                transcript,
                plan=agent.tool_state.plan,
                used_tokens=agent.estimate_context(),
                context_window=agent.context_window,
                cost_usd=agent.conversation.cost_usd,
            )
            await send_updates(self.channel, updates)  # all of it before the response
            await self._announce_custom_commands(session)
            await self._report_mcp_problems(session)
            self._after_response(lambda: self._spawn(self._refresh_models(session, settings)))
        else:
            self._after_response(lambda: self._session_ready(session, settings))
        watcher = session.agent.watcher
        if watcher is not None and session.agent.messages:
            # The model has seen these files: what the user changes before the next prompt
            # is news to it. (A fresh session's watcher starts with its first turn.)
            self._after_response(lambda: self._spawn(watcher.start()))
        log.info("session %s %s in %s", session_id, "loaded" if replay else "resumed", place.cwd)
        return self.session_state(session)

    async def fork_session(self, session_id: str, place: Placement) -> dict[str, Any]:
        """A new session with a copy of the history (the store keeps the lineage)."""
        check_directories(place)
        settings = self.require_credentials()
        live = self._sessions.get(session_id)
        if live is not None:
            await live.persister.flush()
        store = await self.store()
        new_id = secrets.token_hex(16)
        try:
            await asyncio.to_thread(store.fork_session, session_id, new_id, cwd=place.cwd)
        except KeyError:
            raise not_found(session_id) from None
        if place.extra_dirs:
            await asyncio.to_thread(store.update_session, new_id, extra_dirs=place.extra_dirs)
        session, _ = await self._restore_session(settings, new_id, place)
        self._after_response(lambda: self._session_ready(session, settings))
        log.info("session %s forked from %s", new_id, session_id)
        return {"sessionId": new_id, **self.session_state(session)}

    async def _restore_session(
        self, settings: Settings, session_id: str, place: Placement
    ) -> tuple[Session, SessionRecord]:
        from hermes_core.store.writer import save_record

        store = await self.store()
        record = await asyncio.to_thread(store.get_session, session_id)
        if record is None or record.compacted_into is not None:  # archives are history, not sessions
            raise not_found(session_id)
        messages = await asyncio.to_thread(store.load_messages, session_id)
        if not place.extra_dirs:  # none named: the ones it had, if they still exist
            place = dataclasses.replace(place, extra_dirs=existing_dirs(record.extra_dirs))
        session = await self.factory.open(settings, session_id, place, record=record, messages=messages)
        self._report_job_ends(session)
        if (record.cwd, record.extra_dirs) != (place.cwd, place.extra_dirs):
            save_record(session, cwd=place.cwd, extra_dirs=place.extra_dirs)
        self._sessions[session_id] = session
        return session, record

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
        result: dict[str, Any] = {"sessions": [session_info(record) for record in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def close_session(self, session_id: str) -> dict[str, Any]:
        """Stop the session's turn and free what it holds; its history stays stored."""
        async with self._owning(session_id):
            session = self.get(session_id)
            await self._drop(session)
        log.info("session %s closed", session_id)
        return {}

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        async with self._owning(session_id):
            return await self._delete_session(session_id)

    async def _delete_session(self, session_id: str) -> dict[str, Any]:
        live = self._sessions.get(session_id)
        if live is not None:
            await self._drop(live)
        store = await self.store()
        deleted = await asyncio.to_thread(store.delete_session, session_id)
        # Deleting what is not there succeeds: the caller wanted it gone, and it is
        # (the spec's SHOULD; acp-tck DELETE-002).
        if deleted or live is not None:
            log.info("session %s deleted", session_id)
        return {}

    async def _drop(self, session: Session) -> None:
        """Cancel a running turn, write what is pending, release the agent's resources
        (watcher, background processes, provider clients) and the MCP servers."""
        from hermes_core.store.writer import save_turn_state

        self._sessions.pop(session.id, None)
        await self.turns.stop(session)
        save_turn_state(session)
        session.closed = True  # the prompt handler, finishing after us, writes nothing more
        try:
            await asyncio.wait_for(session.persister.flush(), FLUSH_TIMEOUT)
        except TimeoutError:
            log.error("session %s: pending writes did not finish", session.id)
        await session.release()

    @contextlib.asynccontextmanager
    async def _owning(self, session_id: str) -> AsyncIterator[None]:
        """Hold the id's lifecycle: changes to one session id run one after another."""
        lock, users = self._lifecycle.get(session_id, (asyncio.Lock(), 0))
        self._lifecycle[session_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._lifecycle[session_id]
            if users > 1:
                self._lifecycle[session_id] = (lock, users - 1)
            else:
                del self._lifecycle[session_id]

    # -- state ----------------------------------------------------------------------------

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise not_found(session_id)
        return session

    def session_state(self, session: Session) -> dict[str, Any]:
        return self.controls.session_state(session)

    # -- modes and config options --------------------------------------------------------

    async def set_mode(self, session_id: str, mode_id: str) -> dict[str, Any]:
        session = self.get(session_id)
        self.controls.check_mode(mode_id)
        self.controls.apply_mode(session, mode_id)

        async def announce() -> None:
            await self.controls.notify_mode(session)
            await self.controls.notify_config(session)

        self._after_response(lambda: self.turns.send_beside(session, announce))
        return {}

    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> dict[str, Any]:
        session = self.get(session_id)
        if config_id == MODEL_OPTION and isinstance(value, str) and value:
            problem = await self._model_problem(session, value)
            if problem is not None:
                raise self._model_refused(session, f"unknown value {value!r} for configId 'model'", problem)
        if self.controls.change(session, config_id, value) == MODE_OPTION:
            self._after_response(
                lambda: self.turns.send_beside(session, lambda: self.controls.notify_mode(session))
            )
        await session.agent.close_retired()
        return {"configOptions": config_options(self.controls.options(session))}

    async def set_model(self, session_id: str, model_id: str) -> None:
        """session/set_model (older clients): the `model` option, by the same rule."""
        session = self.get(session_id)
        problem = await self._model_problem(session, model_id)
        if problem is not None:
            raise self._model_refused(session, f"unknown modelId {model_id!r}", problem, field="modelId")
        self.controls.apply_model(session, model_id)
        self._after_response(
            lambda: self.turns.send_beside(session, lambda: self.controls.notify_config(session))
        )

    async def _model_problem(self, session: Session, model_id: str) -> str | None:
        if model_id in self.controls.options(session).offered_models():
            return None  # no wait for the SDKs: picking an offered model is instant
        if self._sdks_imported is not None:  # the model list is asked through a provider SDK
            await self._sdks_imported.wait()
        return await self.controls.model_problem(session, model_id)

    def _model_refused(self, session: Session, what: str, problem: str, field: str = "value") -> RequestError:
        offered = self.controls.options(session).offered_models()
        return protocol_error(INVALID_PARAMS, f"{what}: {problem}", {"field": field, "valid": offered})

    def cancel_all(self) -> None:
        """Cancel every running turn (the input ended: nobody is left to watch them)."""
        for session_id in self._sessions:
            self.turns.cancel(session_id)

    # -- plumbing ------------------------------------------------------------------------------

    async def _notify(self, params: dict[str, Any]) -> None:
        await self.channel.send_notification("session/update", params)

    def _report_job_ends(self, session: Session) -> None:
        from hermes_acp.session.jobs import report_job_ends

        report_job_ends(session, self.turns, self._spawn)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def shutdown(self) -> None:
        """Input closed: cancel running turns, write what is pending, free what sessions
        hold (MCP servers, watchers), close the store."""
        for task in list(self._background):
            task.cancel()
        sessions = list(self._sessions.values())
        if sessions:
            await asyncio.gather(*(self._drop(session) for session in sessions))
        await self._store.close()
