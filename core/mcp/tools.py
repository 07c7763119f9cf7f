"""MCP servers' tools as the model sees them: one `Tool` per server tool, named
`mcp__<server>__<tool>`, its result rendered as text. The connections behind them are
`hermes_core.mcp.connections`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import RootModel, ValidationError

from hermes_core.errors import ToolFailed
from hermes_core.events import ToolKind
from hermes_core.providers.base import ToolSpec
from hermes_core.tools.base import Tool, ToolContext, ToolResult
from hermes_core.workspace import Workspace

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as McpToolInfo


log = logging.getLogger(__name__)

_NAME_LIMIT = 64  # the longest tool name the model APIs accept
_DESCRIPTION_LIMIT = 2_000
_TITLE_ARGS_LIMIT = 80


class ServerConfig(Protocol):
    @property
    def name(self) -> str: ...


class ServerLink(Protocol):
    """What a tool needs of its server's connection (`server_link.ServerLink`)."""

    @property
    def config(self) -> ServerConfig: ...

    async def call(self, name: str, arguments: dict[str, Any], seconds: float) -> CallToolResult: ...


class CallTimeout(Protocol):
    """Whoever owns the connections: its timeout per call can change while tools live."""

    call_timeout: float


class McpToolArgs(RootModel[dict[str, Any]]):
    """An MCP tool's arguments: the JSON object the model wrote. The server validates it."""


class McpCallFailed(ToolFailed):
    """A call did not produce a tool result (timeout, connection lost, protocol error)."""


class McpTool(Tool[McpToolArgs]):
    """One tool of an MCP server. Its metadata comes from the server, so it is set per
    instance rather than per class, which is all that differs from the built-in tools."""

    args_model = McpToolArgs

    def __init__(self, name: str, info: McpToolInfo, link: ServerLink, owner: CallTimeout) -> None:
        annotations = info.annotations
        read_only = bool(annotations and annotations.read_only_hint)
        open_world = annotations is None or annotations.open_world_hint is not False
        self.name = name
        self.description = _cap(
            info.description or f"The {info.name} tool of the {link.config.name} MCP server.",
            _DESCRIPTION_LIMIT,
        )
        self.kind: ToolKind = ("fetch" if open_world else "read") if read_only else "other"
        # Annotations are the server's word, and the MCP spec calls them untrusted: a tool
        # that says it only reads still asks until the user answers "always" for it. The
        # hint only decides that plan mode offers it (asking there too) and that it may run
        # beside other reads.
        self.needs_approval = True
        self.read_only = read_only
        self.server = link.config.name
        self.server_key = _clean(self.server)  # as the name spells it: what `mcp__<server>` rules name
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

    def approval_scope(self, args: McpToolArgs) -> str:
        # "always" is per server and tool, named as the server names them: the model-facing
        # name can change between sessions when two servers' names collide.
        return f"{self.server}/{self.remote_name}"

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
                f"The call to {self.server}/{self.remote_name} failed: {describe_error(exc)}", **raw
            )
        text = _cap(render_result(result), ctx.limits.max_output_chars)
        if result.is_error:
            return ToolResult(
                text or "The tool reported an error without a message.", ok=False, raw_output=raw
            )
        return ToolResult(text or "(the tool returned nothing)", raw_output=raw)


def render_result(result: CallToolResult) -> str:
    """A tool result as text for the model: text verbatim, everything else as a note."""
    # Loaded by now (a result came through it); kept off the module level for start-up.
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            size = _decoded_size(block.data)
            parts.append(f"[{block.type} ({block.mime_type}, {size}) returned by the tool; not shown]")
        elif isinstance(block, ResourceLink):
            mime = f", {block.mime_type}" if block.mime_type else ""
            about = f": {block.description}" if block.description else ""
            parts.append(f"[resource link {block.name} <{block.uri}>{mime}{about}]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is not None:
                parts.append(f"[resource <{resource.uri}>]\n{text}")
            else:
                mime = resource.mime_type or "binary"
                size = _decoded_size(getattr(resource, "blob", ""))
                parts.append(f"[resource <{resource.uri}> ({mime}, {size}); not shown]")
        else:
            parts.append(f"[{getattr(block, 'type', None) or 'unknown'} content; not shown]")
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


def unique_name(server: str, tool: str, taken: set[str]) -> str:
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


def timed_out(server: str, tool: str, timeout: float) -> str:
    return f"The call to {server}/{tool} timed out after {timeout:g} s; the server was asked to stop it."


def describe_error(exc: BaseException) -> str:
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
