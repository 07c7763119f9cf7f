"""An ACP connection to the server: in this process over a pair of in-memory byte
streams (the default: no second interpreter to start), or to a child `hermes-acp
--stdio`. Both carry the same JSON lines through the same `LineTransport` an editor's
pipes go through; `benchmarks/bench_terminal.py` measures the two."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from acp.connection import Connection

from hermes_acp.transport import LineTransport

Handler = Callable[[str, Any, bool], Awaitable[Any]]
_READ_LIMIT = 1024 * 1024
CLOSE_SECONDS = 15.0


@dataclass
class Link:
    connection: Connection
    close: Callable[[], Awaitable[None]]


async def connect(place: str, handler: Handler) -> Link:
    return await (child_process(handler) if place == "child" else in_process(handler))


async def in_process(handler: Handler) -> Link:
    from hermes_acp.server import AcpServer

    to_server, to_client = _Pipe(), _Pipe()
    server_side = LineTransport(to_server.reader, to_client.write, on_close=to_client.end)
    server = AcpServer(server_side)
    serving = asyncio.create_task(server.serve())
    connection = Connection(handler, LineTransport(to_client.reader, to_server.write))

    async def close() -> None:
        to_server.end_now()  # end of input: the server cancels what runs, flushes, closes
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(serving), CLOSE_SECONDS)
        await connection.close()

    return Link(connection, close)


async def child_process(handler: Handler) -> Link:
    env = dict(os.environ)
    env.setdefault("HERMES_ACP_LOG_LEVEL", "warning")
    # `-P`: `-m` would put the working directory (the workspace, a CI job's checkout)
    # first on sys.path, and its `hermes_acp/` would be the agent, with the model keys.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "hermes_acp",
        "--stdio",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        limit=_READ_LIMIT,
        start_new_session=True,  # Ctrl-C is ours to turn into session/cancel
    )
    assert process.stdin is not None and process.stdout is not None
    stdin = process.stdin

    async def write(data: bytes) -> None:
        stdin.write(data)
        await stdin.drain()

    connection = Connection(handler, LineTransport(process.stdout, write))

    async def close() -> None:
        stdin.close()
        try:
            await asyncio.wait_for(process.wait(), CLOSE_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
        await connection.close()

    return Link(connection, close)


class _Pipe:
    """One direction of the in-process connection: bytes written land in `reader`."""

    def __init__(self) -> None:
        self.reader = asyncio.StreamReader(limit=_READ_LIMIT)
        self._ended = False

    async def write(self, data: bytes) -> None:
        if self._ended:
            raise ConnectionError("the other side has gone")
        self.reader.feed_data(data)

    async def end(self) -> None:
        self.end_now()

    def end_now(self) -> None:
        if not self._ended:
            self._ended = True
            self.reader.feed_eof()
