"""Two real ACP SDK connections wired back to back in memory: the agent side the bridge
sends through, and an editor side that records every message, validates it against the
schema, and answers requests the way a test tells it to."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp._transport import memory_transport_pair
from acp.connection import Connection
from acp.exceptions import RequestError

from tests.support.schema import validate

# What the schema calls the params of each client-side method.
REQUEST_DEFS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
}
_PING = "_test/ping"

Responder = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass
class Received:
    method: str
    params: dict[str, Any]
    is_notification: bool


@dataclass
class BridgePair:
    agent: Connection
    client: Connection
    received: list[Received] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    responder: Responder | None = None

    @property
    def methods(self) -> list[str]:
        return [r.method for r in self.received]

    def calls(self, method: str) -> list[dict[str, Any]]:
        return [r.params for r in self.received if r.method == method]

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [params["update"] for params in self.calls("session/update")]

    async def settle(self) -> None:
        """Return once the editor side has seen everything sent before this call."""
        await self.agent.send_request(_PING, {})

    async def _handle(self, method: str, params: Any, is_notification: bool) -> Any:
        if method == _PING:
            await asyncio.sleep(0)
            return {}
        self.received.append(Received(method, params, is_notification))
        def_name = REQUEST_DEFS.get(method)
        if def_name is None:
            self.violations.append(f"the agent called {method}, which is not a client method")
        else:
            try:
                validate(def_name, params)
            except AssertionError as exc:
                self.violations.append(str(exc))
        if is_notification:
            return None
        if self.responder is None:
            raise RequestError.method_not_found(method)
        return await self.responder(method, params)

    async def aclose(self) -> None:
        await self.agent.close()
        await self.client.close()
        assert not self.violations, "\n\n".join(self.violations)


async def open_pair(responder: Responder | None = None) -> BridgePair:
    agent_end, client_end = memory_transport_pair()

    async def agent_handler(method: str, params: Any, is_notification: bool) -> Any:
        raise RequestError.method_not_found(method)

    pair = BridgePair(agent=Connection(agent_handler, agent_end), client=None, responder=responder)  # type: ignore[arg-type]
    pair.client = Connection(pair._handle, client_end)
    return pair
