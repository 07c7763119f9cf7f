"""One MCP server's connection: how the editor described it, started or opened, its tools
and prompts listed, called, stopped.

One long-lived task per server (`ServerLink.own`) owns that server's client: transport and
session are entered and left in that task, as anyio requires; tool calls go through the
shared session from whichever task runs them. A stdio server starts through the guard
(core/mcp/guard.py) where it is available, without the credentials the sandbox hides,
in `/` rather than the workspace (core/mcp/server_place.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from hermes_core.mcp.guard import McpServerGuard
from hermes_core.mcp.server_place import SERVER_CWD, outside_workspace, server_command, startable
from hermes_core.mcp.tools import McpCallFailed, describe_error, timed_out

if TYPE_CHECKING:
    import anyio
    from mcp import Client
    from mcp.types import CallToolResult
    from mcp.types import Prompt as McpPromptInfo
    from mcp.types import Tool as McpToolInfo

log = logging.getLogger(__name__)

T = TypeVar("T")
McpTransport = Literal["stdio", "http", "sse"]

_LIST_PAGE_LIMIT = 100  # list pages followed before giving up on a paginator that never ends
# A call's own timeout is enforced by the SDK (which also tells the server to stop);
# this margin is the backstop for a transport stuck before the request is even sent.
_CALL_TIMEOUT_MARGIN = 2.0
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0  # a server may hold a response stream open while a tool runs


@dataclass(slots=True)
class McpServerConfig:
    """One MCP server, independent of how the editor described it."""

    name: str
    command: str | None = None  # stdio: the program to start
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # stdio: added to our environment
    url: str | None = None  # http / sse: the endpoint
    headers: dict[str, str] = field(default_factory=dict)  # http / sse: sent with every request
    transport: McpTransport = "stdio"

    def problem(self) -> str | None:
        """Why this entry cannot be connected, or None when it looks usable."""
        if self.transport == "stdio":
            return None if self.command else "no command to start"
        if self.transport in ("http", "sse"):
            if not self.url or not self.url.startswith(("http://", "https://")):
                return f"{self.transport} transport needs an http(s) URL, got {self.url!r}"
            return None
        return f"unsupported transport {self.transport!r}"


class ServerLink:
    """One server's connection, owned by the task running `own()`."""

    def __init__(
        self, config: McpServerConfig, cwd: Path, mode: str, hidden_env: frozenset[str] = frozenset()
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.mode = mode
        self.hidden_env = hidden_env
        self._guard: McpServerGuard | None = None
        self.task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # set once connected or failed
        self.failure: str | None = None  # why the server is not (or no longer) usable
        self.tools: list[McpToolInfo] = []
        self.prompts: list[McpPromptInfo] = []
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._aborted = False

    @property
    def client(self) -> Client | None:
        """The connected client; None before it connects and after it closes."""
        return self._client

    @property
    def usable(self) -> bool:
        return self._client is not None and self.failure is None

    async def own(self) -> None:
        import anyio

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._aborted:
                    scope.cancel()
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(await self._client_context(stack))
                    self.tools = await _list_tools(client)
                    self.prompts = await _list_prompts(client, self.config.name)
                    if self._guard is not None:
                        self._guard.forget_path()  # it answered: it has told the guard its group
                    self._client = client
                    self.ready.set()
                    await self._stop.wait()
                    self._client = None
        except Exception as exc:
            if self.failure is None:
                self.failure = describe_error(exc)
            log.warning("MCP server %r: %s", self.config.name, self.failure)
            log.debug("MCP server %r failed", self.config.name, exc_info=True)
        finally:
            self._client = None
            if self.failure is None and not self._stop.is_set():
                self.failure = "its connection ended"
            self.ready.set()

    async def _client_context(self, stack: AsyncExitStack) -> AbstractAsyncContextManager[Client]:
        from mcp import Client
        from mcp.types import Implementation

        config = self.config
        transport: AbstractAsyncContextManager[Any]
        if config.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            assert config.command is not None
            env = server_environment(config.env, self.hidden_env, self.cwd)
            command, args = server_command(config.command, self.cwd), list(config.args)
            if McpServerGuard.available():
                # Started through the guard's launcher, a missing program would only show as
                # a closed connection: say what is wrong the way a direct start would.
                if not startable(command, env.get("PATH", os.defpath)):
                    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
                self._guard = guard = McpServerGuard()
                stack.callback(guard.release)  # after the SDK has stopped the server
                command, args = guard.launch(command, args)
            # Not in the workspace: what it holds would run first (core/mcp/server_place.py).
            params = StdioServerParameters(command=command, args=args, env=env, cwd=SERVER_CWD)
            transport = stdio_client(params, errlog=_server_stderr())
        elif config.transport == "sse":
            from mcp.client.sse import sse_client

            assert config.url is not None
            transport = sse_client(config.url, headers=dict(config.headers), timeout=_HTTP_TIMEOUT)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert config.url is not None
            http = httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT)
            )
            await stack.enter_async_context(http)
            transport = streamable_http_client(config.url, http_client=http)
        return Client(
            transport,
            mode=self.mode,
            cache=None,
            client_info=Implementation(name="hermes-acp", version=_version()),
        )

    async def call(self, name: str, arguments: dict[str, Any], seconds: float) -> CallToolResult:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client = self._client
        server = self.config.name
        if client is None or self.failure is not None:
            reason = self.failure or "it is shut down"
            raise McpCallFailed(f"The MCP server {server!r} is not connected ({reason}).")
        try:
            async with asyncio.timeout(seconds + _CALL_TIMEOUT_MARGIN):
                return await client.call_tool(name, arguments, read_timeout_seconds=seconds)
        except TimeoutError:
            raise McpCallFailed(timed_out(server, name, seconds)) from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallFailed(timed_out(server, name, seconds)) from None
            if exc.code == CONNECTION_CLOSED:
                self.failure = "it exited or closed the connection"
                log.warning("MCP server %r: %s", server, self.failure)
                raise McpCallFailed(
                    f"The MCP server {server!r} exited or closed the connection; its tools are unavailable "
                    "for the rest of this session."
                ) from None
            raise McpCallFailed(f"The MCP server {server!r} rejected the call to {name}: {exc}") from None

    def stop(self) -> None:
        """Ask the owner task to close the client; a server still connecting is abandoned."""
        self._stop.set()
        if not self.ready.is_set():
            self.abort()

    def abort(self) -> None:
        """Cancel whatever the owner task is doing; the SDK still shuts a stdio server down."""
        self._aborted = True
        if self._scope is not None:
            self._scope.cancel()


async def _list_tools(client: Client) -> list[McpToolInfo]:
    if client.server_capabilities.tools is None:
        return []
    return await _all_pages(lambda cursor: client.list_tools(cursor=cursor), lambda page: page.tools)


async def _list_prompts(client: Client, server: str) -> list[McpPromptInfo]:
    """The server's prompts; none (with a log line) when listing fails: prompts are extras."""
    if client.server_capabilities.prompts is None:
        return []
    try:
        return await _all_pages(lambda cursor: client.list_prompts(cursor=cursor), lambda page: page.prompts)
    except Exception as exc:
        log.warning("MCP server %r: listing its prompts failed: %s", server, describe_error(exc))
        return []


async def _all_pages(
    list_page: Callable[[str | None], Awaitable[Any]], items: Callable[[Any], list[T]]
) -> list[T]:
    found: list[T] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGE_LIMIT):
        page = await list_page(cursor)
        found.extend(items(page))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def server_environment(extra: dict[str, str], hidden: frozenset[str], session_cwd: Path) -> dict[str, str]:
    """A stdio server's environment: ours without what the sandbox hides from commands (the
    model keys and the other credentials in its list, `hidden` and their numbered pools),
    plus what the editor set for this server, which is the user's own choice. PATH,
    PYTHONPATH and NODE_PATH keep only their absolute entries outside the session's folder."""
    from hermes_core.sandbox.hidden_env import CREDENTIAL_ENV, credential_values, secret_variables

    def hides(name: str) -> bool:
        # `GITHUB_TOKEN`, `NPM_TOKEN`, `STRIPE_SECRET_KEY`: a server from a registry needs none
        # of the user's tokens unless the editor's entry for it names one (`extra`).
        base, _, number = name.rpartition("_")
        if CREDENTIAL_ENV.fullmatch(name) or secret_variables([name]):
            return True
        return name in hidden or (number.isdigit() and base in hidden)

    carrying = set(credential_values(os.environ))  # `DATABASE_URL=postgres://u:pw@…`
    env = {name: value for name, value in os.environ.items() if not hides(name) and name not in carrying}
    # `npx` found through `node_modules/.bin`, or `python` through an activated `.venv/bin`,
    # would be the workspace's (core/mcp/server_place.py).
    return outside_workspace(env, session_cwd) | extra


def _server_stderr() -> TextIO:
    """Where a stdio server's stderr goes: ours, never our stdout (the protocol channel)."""
    global _devnull
    for stream in (sys.stderr, sys.__stderr__):
        if stream is not None:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                stream.fileno()  # the child needs a real file descriptor
                return stream
    if _devnull is None:
        _devnull = open(os.devnull, "w")  # noqa: SIM115 - shared by every server, for the process's life
    return _devnull


_devnull: TextIO | None = None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hermes-acp-agent")
    except PackageNotFoundError:
        return "0"
