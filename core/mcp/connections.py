"""MCP servers the editor hands a session: connected, listed, closed. Their tools are
offered to the model through `hermes_core.mcp.tools`; their prompts through `get_prompt`.

Each server's connection is a `ServerLink` (core/mcp/server_link.py), owned by one
long-lived task. The `mcp` SDK costs over a second to import, so it is loaded only when a
session actually has servers to connect to.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_core.mcp.server_link import McpServerConfig, ServerLink
from hermes_core.mcp.tools import McpCallFailed, McpTool, timed_out, unique_name

if TYPE_CHECKING:
    from mcp.types import GetPromptResult
    from mcp.types import Prompt as McpPromptInfo

    from hermes_core.tools.base import Tool

log = logging.getLogger(__name__)

# Closing a stdio server can take the SDK up to ~6 s (stdin EOF, SIGTERM, SIGKILL, reap).
_CLOSE_GRACE = 8.0
_ABORT_GRACE = 3.0


class McpConnections:
    """The MCP servers of one session: connect, offer their tools, close."""

    def __init__(
        self, *, call_timeout: float = 300.0, mode: str = "auto", hidden_env: frozenset[str] = frozenset()
    ) -> None:
        self.call_timeout = call_timeout  # seconds per tool call
        # Besides the sandbox's credential list: variables a stdio server must not inherit
        # (the fallback providers' key variables).
        self.hidden_env = hidden_env
        self._mode = mode  # the SDK's protocol negotiation: "auto" (discover, else initialize) or "legacy"
        self._links: list[ServerLink] = []
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
        fresh: list[ServerLink] = []
        names = {link.config.name for link in self._links}
        for config in servers:
            problem = config.problem()
            if problem is None and config.name in names:
                problem = "another server already has this name"
            if problem is not None:
                problems.append(_report(config.name, f"{problem}; skipped"))
                continue
            names.add(config.name)
            link = ServerLink(config, Path(cwd), self._mode, self.hidden_env)
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
                tool = McpTool(unique_name(link.config.name, info.name, taken), info, link, self)
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
        client = link.client if link is not None else None
        if link is None or client is None or link.failure is not None:
            raise McpCallFailed(f"The MCP server {server!r} is not connected.")
        try:
            async with asyncio.timeout(self.call_timeout):
                return await client.get_prompt(name, arguments)
        except TimeoutError:
            raise McpCallFailed(timed_out(server, name, self.call_timeout)) from None
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


def _report(server: str, what: str) -> str:
    return f"MCP server {server!r}: {what}"
