"""The editor's MCP servers (the `mcpServers` of session/new, load, resume and fork),
connected for one session so their tools join the session's tool list.

Connecting happens before the agent is built, because the tool list is fixed for the
session's life (prompt caches key on it). A server that fails or is slow is left out
and reported; it never holds the session up for more than `mcp_connect_timeout` seconds
(a setting, 10 by default).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.mcp.connections import McpConnections, McpServerConfig

log = logging.getLogger(__name__)


# What the MCP client needs for each transport; the SDK costs over a second to import.
_SDK_MODULES: dict[str, tuple[str, ...]] = {
    "stdio": ("mcp",),
    "http": ("mcp", "httpx2", "mcp.client.streamable_http"),
    "sse": ("mcp", "mcp.client.sse"),
}


def server_configs(entries: Iterable[Any]) -> list[McpServerConfig]:
    """ACP `McpServer` entries (the SDK's models, or plain dicts) as connection configs.
    Kinds we do not connect to (`type: "acp"`, anything unknown) are logged and left out."""
    entries = list(entries or ())
    if not entries:
        return []
    from hermes_core.mcp.connections import McpServerConfig

    configs: list[McpServerConfig] = []
    for entry in entries:
        name = str(_field(entry, "name") or "?")
        kind = _field(entry, "type")
        if kind is None and _field(entry, "command") is not None:
            kind = "stdio"
        if kind == "stdio":
            configs.append(
                McpServerConfig(
                    name,
                    command=str(_field(entry, "command") or ""),
                    args=[str(arg) for arg in _field(entry, "args") or ()],
                    env=_pairs(_field(entry, "env")),
                )
            )
        elif kind in ("http", "sse"):
            configs.append(
                McpServerConfig(
                    name,
                    url=str(_field(entry, "url") or ""),
                    headers=_pairs(_field(entry, "headers")),
                    transport=kind,
                )
            )
        else:
            log.info("MCP server %r: transport %r is not supported; skipped", name, kind)
    return configs


async def connect(
    entries: Iterable[Any],
    cwd: str,
    *,
    timeout: float,  # noqa: ASYNC109
    hidden_env: frozenset[str] = frozenset(),
) -> tuple[McpConnections | None, list[str]]:
    """Connect the servers at once; the connections (None when there were none to make)
    and what went wrong, one line per server left out. Stdio servers inherit our
    environment less the credentials the sandbox hides, and `hidden_env`."""
    configs = server_configs(entries)
    if not configs:
        return None, []
    modules: list[str] = []
    for config in configs:
        modules += _SDK_MODULES.get(config.transport, ())
    try:
        await asyncio.to_thread(_import_all, list(dict.fromkeys(modules)))  # off the event loop
    except ImportError as exc:  # a broken install must not cost the editor its sessions
        log.error("the MCP client did not load: %s", exc)
        names = ", ".join(repr(config.name) for config in configs)
        return None, [f"MCP servers {names}: the MCP client did not load ({exc}); skipped"]
    from hermes_core.mcp.connections import McpConnections

    connections = McpConnections(hidden_env=hidden_env)
    try:
        problems = await connections.start(configs, cwd=Path(cwd), timeout=timeout)
    except BaseException:
        await connections.aclose()
        raise
    for problem in problems:
        log.warning("%s", problem)
    return connections, problems


def problems_note(problems: list[str]) -> str:
    """What the user is told, once, about servers the session goes without."""
    lines = "\n".join(f"- {problem}" for problem in problems)
    return f"**Some MCP servers are not available in this session:**\n{lines}\n"


def _import_all(modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(module)


def _field(entry: Any, name: str) -> Any:
    if isinstance(entry, dict):
        return entry.get(name)
    return getattr(entry, name, None)


def _pairs(items: Any) -> dict[str, str]:
    """`[{name, value}]` (env variables, HTTP headers) as a dict."""
    pairs: dict[str, str] = {}
    for item in items or ():
        name = _field(item, "name")
        if name:
            pairs[str(name)] = str(_field(item, "value") or "")
    return pairs
