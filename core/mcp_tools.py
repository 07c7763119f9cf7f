"""MCP servers the editor hands a session, offered to the model as tools.

One long-lived task per server owns that server's client (transport and session are
entered and left in that task, as anyio requires); tool calls go through the shared
session from whichever task runs them. The `mcp` SDK costs over a second to import,
so it is loaded only when a session actually has servers to connect to.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import sys
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pydantic import RootModel, ValidationError

from core.errors import ToolFailed
from core.events import ToolKind
from core.providers.base import ToolSpec
from core.tools.base import Tool, ToolContext, ToolResult
from core.workspace import Workspace

if TYPE_CHECKING:
    import anyio
    from mcp import Client
    from mcp.types import CallToolResult, GetPromptResult
    from mcp.types import Prompt as McpPromptInfo
    from mcp.types import Tool as McpToolInfo

log = logging.getLogger(__name__)

McpTransport = Literal["stdio", "http", "sse"]

_NAME_LIMIT = 64  # the longest tool name the model APIs accept
_DESCRIPTION_LIMIT = 2_000
_TITLE_ARGS_LIMIT = 80
_LIST_PAGE_LIMIT = 100  # tools/list pages followed before giving up on a paginator that never ends
# A call's own timeout is enforced by the SDK (which also tells the server to stop);
# this margin is the backstop for a transport stuck before the request is even sent.
_CALL_TIMEOUT_MARGIN = 2.0
# Closing a stdio server can take the SDK up to ~6 s (stdin EOF, SIGTERM, SIGKILL, reap).
_CLOSE_GRACE = 8.0
_ABORT_GRACE = 3.0
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


class McpToolArgs(RootModel[dict[str, Any]]):
    """An MCP tool's arguments: the JSON object the model wrote. The server validates it."""


class McpCallFailed(ToolFailed):
    """A call did not produce a tool result (timeout, connection lost, protocol error)."""


class McpConnections:
    """The MCP servers of one session: connect, offer their tools, close."""

    def __init__(self, *, call_timeout: float = 300.0, mode: str = "auto") -> None:
        self.call_timeout = call_timeout  # seconds per tool call
        self._mode = mode  # the SDK's protocol negotiation: "auto" (discover, else initialize) or "legacy"
        self._links: list[_ServerLink] = []
        self._tools: list[McpTool] = []

    # The timeout is per server (a slow one is dropped, the rest still connect), so not a
    # caller-side timeout.
    async def start(
        self,
        servers: list[McpServerConfig],
        *,
        cwd: Path,
        timeout: float = 20.0,  # noqa: ASYNC109
    ) -> list[str]:
        """Connect to every server at once; returns what went wrong, one line per server.

        A server that fails or does not answer within `timeout` seconds is left out;
        the others are connected regardless.
        """
        problems: list[str] = []
        fresh: list[_ServerLink] = []
        names = {link.config.name for link in self._links}
        for config in servers:
            problem = config.problem()
            if problem is None and config.name in names:
                problem = "another server already has this name"
            if problem is not None:
                problems.append(_report(config.name, f"{problem}; skipped"))
                continue
            names.add(config.name)
            link = _ServerLink(config, Path(cwd), self._mode)
            link.task = asyncio.create_task(link.own(), name=f"mcp:{config.name}")
            fresh.append(link)
        self._links.extend(fresh)
        if fresh:
            waiters = [asyncio.create_task(link.ready.wait()) for link in fresh]
            try:
                await asyncio.wait(waiters, timeout=timeout)
            except asyncio.CancelledError:
                for link in fresh:
                    link.stop()
                raise
            finally:
                for waiter in waiters:
                    waiter.cancel()
        taken = {tool.name for tool in self._tools}
        for link in fresh:
            if not link.ready.is_set():
                link.failure = f"did not connect within {timeout:g} s"
                link.stop()
            if link.failure is not None:
                problems.append(_report(link.config.name, f"{link.failure}; skipped"))
                continue
            for info in link.tools:
                tool = McpTool(_unique_name(link.config.name, info.name, taken), info, link, self)
                taken.add(tool.name)
                self._tools.append(tool)
            log.info("MCP server %r connected with %d tools", link.config.name, len(link.tools))
        return problems

    def tools(self) -> list[Tool]:
        return list(self._tools)

    def prompts(self) -> list[tuple[str, McpPromptInfo]]:
        """(server, prompt) for every prompt the connected servers offer."""
        return [(link.config.name, prompt) for link in self._links if link.usable for prompt in link.prompts]

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> GetPromptResult:
        """The server's prompt filled in; McpCallFailed when the server cannot give it."""
        from mcp import MCPError

        link = next((link for link in self._links if link.config.name == server), None)
        client = link._client if link is not None else None
        if link is None or client is None or link.failure is not None:
            raise McpCallFailed(f"The MCP server {server!r} is not connected.")
        try:
            async with asyncio.timeout(self.call_timeout):
                return await client.get_prompt(name, arguments)
        except TimeoutError:
            raise McpCallFailed(_timed_out(server, name, self.call_timeout)) from None
        except MCPError as exc:
            raise McpCallFailed(f"The MCP server {server!r} refused the prompt {name}: {exc}") from None

    def connected(self) -> list[str]:
        """Names of the servers whose tools are on offer and whose connection still stands."""
        return [link.config.name for link in self._links if link.usable]

    async def aclose(self) -> None:
        """Close every session and stop every server process started; safe to call twice."""
        links, self._links = self._links, []
        self._tools = []
        for link in links:
            link.stop()
        tasks = {link.task: link for link in links if link.task is not None and not link.task.done()}
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=_CLOSE_GRACE)
        for task in pending:
            tasks[task].abort()
        if pending:
            _, pending = await asyncio.wait(pending, timeout=_ABORT_GRACE)
        for task in pending:
            log.warning("MCP server %r did not shut down; cancelling its task", tasks[task].config.name)
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class McpTool(Tool[McpToolArgs]):
    """One tool of an MCP server. Its metadata comes from the server, so it is set per
    instance rather than per class, which is all that differs from the built-in tools."""

    args_model = McpToolArgs

    def __init__(self, name: str, info: McpToolInfo, link: _ServerLink, owner: McpConnections) -> None:
        annotations = info.annotations
        read_only = bool(annotations and annotations.read_only_hint)
        open_world = annotations is None or annotations.open_world_hint is not False
        self.name = name
        self.description = _cap(
            info.description or f"The {info.name} tool of the {link.config.name} MCP server.",
            _DESCRIPTION_LIMIT,
        )
        self.kind: ToolKind = ("fetch" if open_world else "read") if read_only else "other"
        self.needs_approval = not read_only
        self.read_only = read_only
        self.server = link.config.name
        self.remote_name = info.name
        self.display_name = (
            (annotations.title if annotations and annotations.title else None) or info.title or info.name
        )
        self.input_schema: dict[str, Any] = dict(info.input_schema or {})
        self.input_schema.setdefault("type", "object")
        self._link = link
        self._owner = owner

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema)

    def parse(self, arguments: dict[str, Any]) -> McpToolArgs:
        args = McpToolArgs.model_validate(arguments)  # not an object -> ValidationError
        required = self.input_schema.get("required")
        missing = [key for key in required if key not in args.root] if isinstance(required, list) else []
        if missing:
            raise ValidationError.from_exception_data(
                self.name, [{"type": "missing", "loc": (key,), "input": arguments} for key in missing]
            )
        return args

    def title(self, args: McpToolArgs, workspace: Workspace) -> str:
        title = f"{self.server}: {self.display_name}"
        if args.root:
            shown = json.dumps(args.root, ensure_ascii=False, separators=(", ", ": "))
            if len(shown) > _TITLE_ARGS_LIMIT:
                shown = shown[: _TITLE_ARGS_LIMIT - 1] + "…"
            title += f" {shown}"
        return title

    async def run(self, args: McpToolArgs, ctx: ToolContext) -> ToolResult:
        raw = {"server": self.server, "tool": self.remote_name}
        try:
            result = await self._link.call(self.remote_name, args.root, self._owner.call_timeout)
        except McpCallFailed as exc:
            return ToolResult.error(str(exc), **raw)
        except Exception as exc:  # whatever the SDK or the server throws is the model's to read
            log.warning("MCP call %s/%s failed", self.server, self.remote_name, exc_info=True)
            return ToolResult.error(
                f"The call to {self.server}/{self.remote_name} failed: {_describe(exc)}", **raw
            )
        text = _cap(render_result(result), ctx.limits.max_output_chars)
        if result.is_error:
            return ToolResult(
                text or "The tool reported an error without a message.", ok=False, raw_output=raw
            )
        return ToolResult(text or "(the tool returned nothing)", raw_output=raw)


class _ServerLink:
    """One server's connection, owned by the task running `own()`."""

    def __init__(self, config: McpServerConfig, cwd: Path, mode: str) -> None:
        self.config = config
        self.cwd = cwd
        self.mode = mode
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
                    self._client = client
                    self.ready.set()
                    await self._stop.wait()
                    self._client = None
        except Exception as exc:
            if self.failure is None:
                self.failure = _describe(exc)
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
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env={**os.environ, **config.env},
                cwd=self.cwd,
            )
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
            raise McpCallFailed(_timed_out(server, name, seconds)) from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallFailed(_timed_out(server, name, seconds)) from None
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
    tools: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGE_LIMIT):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _list_prompts(client: Client, server: str) -> list[McpPromptInfo]:
    """The server's prompts; none (with a log line) when listing fails: prompts are extras."""
    if client.server_capabilities.prompts is None:
        return []
    prompts: list[McpPromptInfo] = []
    cursor: str | None = None
    try:
        for _ in range(_LIST_PAGE_LIMIT):
            page = await client.list_prompts(cursor=cursor)
            prompts.extend(page.prompts)
            cursor = page.next_cursor
            if not cursor:
                break
    except Exception as exc:
        log.warning("MCP server %r: listing its prompts failed: %s", server, _describe(exc))
        return []
    return prompts


def render_result(result: CallToolResult) -> str:
    """A tool result as text for the model: text verbatim, everything else as a note."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = _decoded_size(block.data)
            parts.append(f"[{kind} ({block.mime_type}, {size}) returned by the tool; not shown]")
        elif kind == "resource_link":
            mime = f", {block.mime_type}" if block.mime_type else ""
            about = f": {block.description}" if block.description else ""
            parts.append(f"[resource link {block.name} <{block.uri}>{mime}{about}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is not None:
                parts.append(f"[resource <{resource.uri}>]\n{text}")
            else:
                mime = resource.mime_type or "binary"
                size = _decoded_size(getattr(resource, "blob", ""))
                parts.append(f"[resource <{resource.uri}> ({mime}, {size}); not shown]")
        else:
            parts.append(f"[{kind or 'unknown'} content; not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(parts)


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: `mcp__<server>__<tool>`, only [a-zA-Z0-9_-], at most 64 chars."""
    name = f"mcp__{_clean(server)}__{_clean(tool)}"
    if len(name) > _NAME_LIMIT:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[: _NAME_LIMIT - 9]}_{digest}"
    return name


def _unique_name(server: str, tool: str, taken: set[str]) -> str:
    base = tool_name(server, tool)
    name, n = base, 2
    while name in taken:
        suffix = f"_{n}"
        name = base[: _NAME_LIMIT - len(suffix)] + suffix
        n += 1
    return name


def _clean(part: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", part) or "_"


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]}\n… [{len(text) - 2 * half:,} characters cut] …\n{text[-half:]}"


def _decoded_size(data: str) -> str:
    size = len(data) * 3 // 4
    return f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"


def _timed_out(server: str, tool: str, timeout: float) -> str:
    return f"The call to {server}/{tool} timed out after {timeout:g} s; the server was asked to stop it."


def _describe(exc: BaseException) -> str:
    """The innermost real error of an exception (groups unwrapped), in one line."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if not inner:
            break
        exc = inner[0]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"cannot start it: {exc.strerror}: {exc.filename}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    text = str(exc).strip().split("\n", 1)[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _report(server: str, what: str) -> str:
    return f"MCP server {server!r}: {what}"


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
        return version("hermes-acp")
    except PackageNotFoundError:
        return "0"
