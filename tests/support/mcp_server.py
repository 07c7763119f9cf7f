"""A tiny MCP server for the MCP connection tests, built on the SDK's MCPServer (ex FastMCP).

Run as a script it serves stdio (and first writes its pid to the file named by
HERMES_MCP_PID_FILE, when set, so a test can tell whether it still runs). As a stubborn
server would, it ignores SIGTERM when HERMES_MCP_IGNORE_TERM is set, and with
HERMES_MCP_CHILD_PID_FILE it starts a child that ignores SIGTERM too and writes its pid there.
`http_servers()` serves the same tools over streamable HTTP and SSE on 127.0.0.1 from a
background thread of the test process.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations


def build_server() -> MCPServer:
    server = MCPServer("hermes-test")

    @server.prompt()
    def review(path: str) -> str:
        """Ask for a careful review of one file."""
        return f"Review {path} carefully and list every bug you find."

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text back."""
        return text

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    def where(variable: str = "HERMES_MCP_TEST") -> str:
        """The server's working directory and one environment variable (read-only)."""
        return f"cwd={os.getcwd()} {variable}={os.environ.get(variable, '<unset>')}"

    @server.tool()
    def fail(message: str) -> str:
        """Always raises, with the message."""
        raise ToolError(message)

    @server.tool(structured_output=False)
    def snapshot() -> list[Any]:
        """Text, a picture and an embedded text resource."""
        note = TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="remember the milk")
        return [
            TextContent(type="text", text="Here is the screen."),
            Image(data=b"\x89PNG" + b"\0" * 2044, format="png"),
            EmbeddedResource(type="resource", resource=note),
        ]

    @server.tool()
    async def snooze(seconds: float) -> str:
        """Sleep, then answer. `snooze.started` in HERMES_MCP_SNOOZE_DIR tells a test the call arrived."""
        Path(os.environ.get("HERMES_MCP_SNOOZE_DIR", "."), "snooze.started").touch()
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def crash() -> str:
        """Exit the server process at once, as a crash would."""
        os._exit(3)

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """A header of the HTTP request that carried this call."""
        headers = ctx.headers or {}
        return headers.get(name.lower(), "<missing>")

    return server


@dataclass(frozen=True, slots=True)
class HttpEndpoints:
    streamable_http: str
    sse: str


@contextmanager
def http_servers() -> Iterator[HttpEndpoints]:
    """Serve the test tools over streamable HTTP and SSE on loopback ports the OS picks."""
    import uvicorn

    sockets = []
    for _ in range(2):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
    apps = [build_server().streamable_http_app(), build_server().sse_app()]
    servers = [
        uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1))
        for app in apps
    ]

    async def serve() -> None:
        await asyncio.gather(*(s.serve(sockets=[sock]) for s, sock in zip(servers, sockets, strict=True)))

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not all(s.started for s in servers):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP HTTP servers did not start")
        time.sleep(0.02)
    http_port, sse_port = (sock.getsockname()[1] for sock in sockets)
    try:
        yield HttpEndpoints(f"http://127.0.0.1:{http_port}/mcp", f"http://127.0.0.1:{sse_port}/sse")
    finally:
        for s in servers:
            s.should_exit = True
        thread.join(timeout=5)
        for sock in sockets:
            sock.close()


def _stubborn_child(pid_file: str, *, detached: bool = False) -> None:
    """A child that ignores SIGTERM; `detached`: in a session (and group) of its own, as a
    daemon's `setsid` leaves it."""
    import subprocess
    import sys

    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, start_new_session=detached
    )
    with open(pid_file, "w") as out:
        out.write(str(child.pid))


if __name__ == "__main__":
    import signal

    if os.environ.get("HERMES_MCP_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if child_pid_file := os.environ.get("HERMES_MCP_CHILD_PID_FILE"):
        _stubborn_child(child_pid_file)
    if detached_pid_file := os.environ.get("HERMES_MCP_DETACHED_PID_FILE"):
        _stubborn_child(detached_pid_file, detached=True)
    pid_file = os.environ.get("HERMES_MCP_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    build_server().run("stdio")
