"""The ACP method table: what a client may call, and where each call goes.

`AcpServer.requests` and `AcpServer.notifications` are the table of contents:
method name -> (params model, handler); a model is named as the SDK's schema names it.
Each request goes through the start-up layer's one door (`Startup.read`,
hermes_acp/startup/): it waits for what the warm-up imports, and its params are read
without the schema when they are plainly valid, else by the schema's model (a bad field
is a -32602 naming it). Sessions live in the SessionManager; `session/prompt` and
`session/cancel` go to its turn runner. The requests in flight are kept by id here, for
`$/cancel_request`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from acp.connection import Connection
from acp.exceptions import RequestError

from hermes_acp import __version__
from hermes_acp.session.errors import AUTH_REQUIRED, INTERNAL_ERROR, INVALID_PARAMS, auth_help, user_error
from hermes_acp.session.state import ClientProfile
from hermes_acp.startup import HELLO_MODEL, Startup, agent_hello, auth_methods
from hermes_acp.transport import LineTransport, current_request_id

if TYPE_CHECKING:
    from acp import schema
    from pydantic import BaseModel

    from hermes_acp.session.early_build import EarlyBuild
    from hermes_acp.session.manager import SessionManager
    from hermes_acp.session.options import SetModelParams
    from hermes_acp.session.turn import TurnRunner
    from hermes_acp.startup import (
        AuthChoice,
        ClientHello,
        EarlySession,
        ListQuery,
        ModeChange,
        NoParams,
        ParamsModel,
        PlacementParams,
        PromptParams,
        RequestRef,
        SessionRef,
    )

log = logging.getLogger(__name__)

METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800
DRAIN_SECONDS = 10.0  # how long requests in flight at end of input may take to answer

Params = dict[str, Any]
Handler = Callable[[Any, Params], Awaitable[Any]]


def _set_model_params(params: Params) -> type[BaseModel]:
    from hermes_acp.session.options import SetModelParams

    return SetModelParams


def _placement(request: Any) -> Any:
    from hermes_acp.session.factory import Placement

    return Placement.of(request)


def _rewind_params(params: Params) -> type[BaseModel]:
    from hermes_acp.session.rewind import RewindParams

    return RewindParams


def _config_option_model(params: Params) -> str:
    if params.get("type") == "boolean":
        return "SetSessionConfigOptionBooleanRequest"
    return "SetSessionConfigOptionSelectRequest"


OPENING = frozenset({"session/load", "session/resume"})


def session_opened(message: Params) -> str | None:
    """The session a request opens: later requests naming it wait for its answer."""
    params = message.get("params")
    if message.get("method") in OPENING and isinstance(params, dict):
        session_id = params.get("sessionId")
        return session_id if isinstance(session_id, str) else None
    return None


def session_named(message: Params) -> str | None:
    params = message.get("params")
    session_id = params.get("sessionId") if isinstance(params, dict) else None
    return session_id if isinstance(session_id, str) else None


class AcpServer:
    def __init__(self, transport: LineTransport, *, environ: dict[str, str] | None = None) -> None:
        self.transport = transport
        self._requests: dict[RequestKey, InFlight] = {}  # by id, for $/cancel_request
        self.connection = Connection(self.dispatch, transport, listening=False)
        self.client = ClientProfile()
        self._in_flight: set[asyncio.Task[Any]] = set()
        self.startup = Startup()  # the start-up layer's one door
        self._environ = environ
        # A session/new answered before the server existed, built before anything else is served.
        self._early: EarlyBuild | None = None
        # Which requests wait for which: the transport knows nothing of sessions.
        transport.opens, transport.needs = session_opened, session_named
        self.requests: dict[str, tuple[ParamsModel, Handler]] = {
            "initialize": (HELLO_MODEL, self.initialize),
            "authenticate": ("AuthenticateRequest", self.authenticate),
            "session/new": ("NewSessionRequest", self.new_session),
            "session/set_mode": ("SetSessionModeRequest", self.set_mode),
            "session/set_config_option": (_config_option_model, self.set_config_option),
            "session/prompt": ("PromptRequest", self.prompt),
            "session/load": ("LoadSessionRequest", self.load_session),
            "session/resume": ("ResumeSessionRequest", self.resume_session),
            "session/fork": ("ForkSessionRequest", self.fork_session),
            "session/list": ("ListSessionsRequest", self.list_sessions),
            "session/close": ("CloseSessionRequest", self.close_session),
            "session/delete": ("DeleteSessionRequest", self.delete_session),
            "logout": ("LogoutRequest", self.logout),
            "_hermes/rewind": (_rewind_params, self.rewind),
            # Gone from the spec; clients from before config options still send it.
            "session/set_model": (_set_model_params, self.set_model),
        }
        self.notifications: dict[str, tuple[ParamsModel, Handler]] = {
            "session/cancel": ("CancelNotification", self.cancel),
            "$/cancel_request": ("CancelRequestNotification", self.cancel_request),
        }

    @cached_property
    def sessions(self) -> SessionManager:
        """Made on first use: every request but `initialize` waits for the warm-up, which
        imports the session modules (a pydantic model among them) after the answer."""
        from hermes_acp.session.manager import SessionManager

        return SessionManager(
            self.connection,
            after_response=self.transport.after_response,
            client=self.client,
            environ=self._environ,
            sdks_imported=self.startup.sdks_imported,
        )

    @property
    def turns(self) -> TurnRunner:
        return self.sessions.turns

    def cancel_turns(self) -> None:
        """Cancel every running turn (there are none before the first session)."""
        if "sessions" in self.__dict__:
            self.sessions.cancel_all()

    async def serve(self) -> None:
        """Answer requests until the input ends; then cancel turns, answer what is still
        in flight (a script may write its last requests and close stdin at once), flush
        state and close."""
        try:
            await self.connection.main_loop()
        finally:
            log.info("input closed; shutting down")
            self.cancel_turns()
            if self._in_flight:
                await asyncio.wait(set(self._in_flight), timeout=DRAIN_SECONDS)
            if self._early is not None:
                await self._early.settle(DRAIN_SECONDS)
            if "sessions" in self.__dict__:  # no manager, nothing to flush or close
                await self.sessions.shutdown()
            await self.connection.close()

    async def finish_in_flight(self, seconds: float) -> None:
        """End of input: let the requests already read (a prompt a script piped in) finish,
        for up to `seconds`; serve() cancels whatever is left after that."""
        await asyncio.sleep(0)  # handlers of the last lines read register as in flight first
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=seconds)

    # -- dispatch -------------------------------------------------------------------------

    async def dispatch(self, method: str, params: Any, is_notification: bool) -> Any:
        if is_notification:
            return await self._dispatch(method, params, is_notification)
        # The transport sets the id as it hands the request over; the SDK does not pass it on.
        key = request_key(current_request_id.get())
        task = asyncio.current_task()
        if task is None or key in self._requests:  # an id reused while in flight: not cancellable
            return await self._dispatch(method, params, is_notification)
        entry = self._requests[key] = InFlight(task)
        if (
            method == "session/prompt"
            and isinstance(params, dict)
            and isinstance(params.get("sessionId"), str)
        ):
            entry.prompt_session = params["sessionId"]
        try:
            return await self._dispatch(method, params, is_notification)
        except asyncio.CancelledError:
            if not entry.cancelled:
                raise
            task.uncancel()
            log.info("request %s (%s) cancelled by the client", key[1], method)
            raise RequestError(REQUEST_CANCELLED, "Request cancelled", {"requestId": key[1]}) from None
        finally:
            del self._requests[key]

    async def _dispatch(self, method: str, params: Any, is_notification: bool) -> Any:
        table = self.notifications if is_notification else self.requests
        entry = table.get(method)
        if entry is None:
            if is_notification:
                log.debug("ignoring unknown notification %s", method)
                return None
            raise RequestError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
        model, handler = entry
        if not is_notification:
            # The task also writes the response once we return; shutdown waits for it.
            task = asyncio.current_task()
            assert task is not None
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
        try:
            request, raw = await self.startup.read(method, model, params)
            early, named = self._early, session_named({"params": params})
            if early is not None and await early.wait(named, report=not is_notification):
                self._early = None
        except RequestError:
            if is_notification:
                log.warning("ignoring %s with invalid params: %r", method, params)
                return None
            raise
        return await handler(request, raw)

    # -- a session/new answered before the server existed -----------------------------------

    def adopt(self, early: EarlySession) -> None:
        """Build the session the early start answered (hermes_acp/startup/early_session.py).
        It is stored before any other request is served: they wait for the build."""
        from hermes_acp.session.early_build import EarlyBuild

        self._early = EarlyBuild(early.session_id, self._build_early(early))

    async def _build_early(self, early: EarlySession) -> None:
        await self.startup.warmup.modules_ready()  # the session modules: never imported on the loop
        from hermes_acp.session.factory import Placement

        place = Placement(early.cwd, early.extra_dirs, [])
        await self.sessions.open_answered(early.session_id, place, early.answer)
        self.startup.session_opening()  # its turns' HTTP modules, as after a session/new answer

    # -- handlers -----------------------------------------------------------------------

    async def initialize(self, request: ClientHello, raw: Params) -> Params:
        self.greeted(request)
        self.transport.after_response(self.startup.greeted)
        return agent_hello(__version__, terminal_auth=self.client.terminal_auth)

    def greeted(self, hello: ClientHello) -> None:
        """Take the client's hello, answered here or before the server existed (early_hello.py)."""
        # One object shared with the manager: sessions made later see these capabilities.
        for name in self.client.__slots__:  # the hello names each capability as the profile does
            setattr(self.client, name, getattr(hello, name))
        client = hello.client_name or "an unnamed client"
        log.info("initialize from %s (protocol %s): %s", client, hello.protocol_version, self.client)

    async def authenticate(self, request: schema.AuthenticateRequest | AuthChoice, raw: Params) -> Params:
        valid = [method["id"] for method in auth_methods(terminal_auth=self.client.terminal_auth)]
        if request.method_id not in valid:
            raise RequestError(
                INVALID_PARAMS,
                f"unknown methodId {request.method_id!r}; valid: {', '.join(map(repr, valid))}",
                {"field": "methodId", "valid": valid},
            )
        settings = await asyncio.to_thread(self.sessions.load_settings)
        from hermes_core.providers.resolve import has_credentials

        if not has_credentials(settings):
            raise user_error(AUTH_REQUIRED, auth_help(settings))
        return {}

    async def new_session(self, request: schema.NewSessionRequest | PlacementParams, raw: Params) -> Params:
        return self._then_warm_http(await self.sessions.new_session(_placement(request)))

    def _then_warm_http(self, result: Params) -> Params:
        """A session is open: what its model calls need is imported once its answer is out
        (a thread importing beside the session's own work would only slow both)."""
        self.transport.after_response(self.startup.session_opening)
        return result

    async def set_mode(self, request: schema.SetSessionModeRequest | ModeChange, raw: Params) -> Params:
        return await self.sessions.set_mode(request.session_id, request.mode_id)

    async def set_config_option(self, request: Any, raw: Params) -> Params:
        return await self.sessions.set_config_option(request.session_id, request.config_id, request.value)

    async def prompt(self, request: schema.PromptRequest | PromptParams, raw: Params) -> Params:
        self.startup.session_opening()  # its turn waits for it: never for an answer that was not written
        return await self.turns.prompt(request.session_id, list(raw["prompt"]))

    async def load_session(self, request: schema.LoadSessionRequest | PlacementParams, raw: Params) -> Params:
        return await self._restore(request, replay=True)

    async def resume_session(
        self, request: schema.ResumeSessionRequest | PlacementParams, raw: Params
    ) -> Params:
        return await self._restore(request, replay=False)

    async def _restore(self, request: Any, *, replay: bool) -> Params:
        return self._then_warm_http(
            await self.sessions.load_session(request.session_id, _placement(request), replay=replay)
        )

    async def fork_session(self, request: schema.ForkSessionRequest | PlacementParams, raw: Params) -> Params:
        if request.session_id is None:  # its reader requires one; the type is shared with session/new
            raise RequestError(
                INVALID_PARAMS, "Invalid params: sessionId: required", {"fields": ["sessionId"]}
            )
        return self._then_warm_http(await self.sessions.fork_session(request.session_id, _placement(request)))

    async def list_sessions(self, request: schema.ListSessionsRequest | ListQuery, raw: Params) -> Params:
        return await self.sessions.list_sessions(request.cwd, request.cursor)

    async def close_session(self, request: schema.CloseSessionRequest | SessionRef, raw: Params) -> Params:
        return await self.sessions.close_session(request.session_id)

    async def delete_session(self, request: schema.DeleteSessionRequest | SessionRef, raw: Params) -> Params:
        return await self.sessions.delete_session(request.session_id)

    async def cancel(self, request: schema.CancelNotification | SessionRef, raw: Params) -> None:
        self.turns.cancel(request.session_id)

    async def cancel_request(
        self, request: schema.CancelRequestNotification | RequestRef, raw: Params
    ) -> None:
        """A prompt is cancelled as session/cancel does it (its turn ends "cancelled"); any
        other request in flight stops and answers -32800."""
        request_id = raw.get("requestId")
        entry = self._requests.get(request_key(request_id))
        if entry is None or entry.task.done():
            log.debug("$/cancel_request for %r: no such request in flight", request_id)
        elif entry.prompt_session is not None:
            self.turns.cancel(entry.prompt_session)
        else:
            entry.cancelled = True
            entry.task.cancel()

    async def logout(self, request: schema.LogoutRequest | NoParams, raw: Params) -> Params:
        """Forget the API keys `hermes-acp setup` wrote to config.toml. Keys in the
        environment are the editor's to remove: they are named, not touched."""
        from hermes_core.credentials import forget_stored_keys
        from hermes_core.providers.resolve import has_credentials

        settings = await asyncio.to_thread(self.sessions.load_settings)
        try:
            removed = await asyncio.to_thread(forget_stored_keys, settings.home)
        except ValueError as exc:
            raise RequestError(INTERNAL_ERROR, str(exc), {"details": str(exc)}) from None
        log.info("logout: removed %s from %s", ", ".join(removed) or "nothing", settings.config_path)
        try:
            still = has_credentials(await asyncio.to_thread(self.sessions.load_settings))
        except RequestError:
            still = False
        return {"_meta": {"hermes": {"removed": removed, "keysStillInEnvironment": still}}}

    async def rewind(self, request: Any, raw: Params) -> Params:
        from hermes_acp.session.rewind import rewind_request

        return await rewind_request(self.sessions.get(request.session_id), request)

    async def set_model(self, request: SetModelParams, raw: Params) -> Params:
        await self.sessions.set_model(request.session_id, request.model_id)
        return {}


RequestKey = tuple[type, Any]


@dataclass(slots=True)
class InFlight:
    """A request being served: its task and, for a prompt, the prompt's session."""

    task: asyncio.Task[Any]
    prompt_session: str | None = None  # $/cancel_request cancels a prompt as session/cancel does
    cancelled: bool = False  # by $/cancel_request: the request answers -32800


def request_key(request_id: Any) -> RequestKey:
    # 1 and "1" are different ids; True is not 1
    return (type(request_id), request_id)
