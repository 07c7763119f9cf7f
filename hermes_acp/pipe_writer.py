"""The output pipe: what the transport's `write` runs for every message on stdio.

`PipeWriter` is the pipe's asyncio protocol: `write()` waits while the client is not
reading (flow control), `close()` lets the pipe flush, briefly. Wired to a LineTransport
on real file descriptors by hermes_acp/startup/fd_transport.py.

The first message of a turn of the event loop is written at once; the ones written after
it in the same turn go out together at the start of the next: with many sessions' turns
in flight one system call (and one wake-up of the client) carries several messages, and a
lone message (the first chunk of a reply) waits for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib


class PipeWriter(asyncio.Protocol):
    """The output pipe's protocol and the transport's `write`: `write()` waits while the
    client is not reading (flow control); `close()` lets the pipe flush, briefly."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pipe: asyncio.WriteTransport | None = None
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost = asyncio.Event()
        self._batch: list[bytes] | None = None  # None: nothing written yet this loop turn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._pipe = transport  # type: ignore[assignment]

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost.set()
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def write(self, data: bytes) -> None:
        assert self._pipe is not None
        if self._pipe.is_closing():
            raise ConnectionError("output closed")
        if self._batch is None:
            self._pipe.write(data)
            self._batch = []
            self._loop.call_soon(self._flush)
        else:
            self._batch.append(data)
        if self._paused and not self._lost.is_set():
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter
        if self._lost.is_set():
            raise ConnectionError("output closed")

    def _flush(self) -> None:
        batch, self._batch = self._batch, None
        if batch and self._pipe is not None and not self._pipe.is_closing():
            self._pipe.write(b"".join(batch))

    async def close(self) -> None:
        # close() writes out what the pipe has not taken yet (the last responses) before
        # it lets go of the fd; wait for that, a little.
        self._flush()
        if self._pipe is not None:
            self._pipe.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._lost.wait(), 2.0)
