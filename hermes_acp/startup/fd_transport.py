"""A LineTransport on real file descriptors: how editors and people start us (stdio).

Only start-up runs here; what each message runs is in transport.py and pipe_writer.py.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable

from hermes_acp.pipe_writer import PipeWriter
from hermes_acp.transport import LineTransport, WireTracer

READ_LIMIT = 1024 * 1024  # the reader's buffer; longer lines are read in pieces


async def open_fd_transport(
    read_fd: int,
    write_fd: int,
    *,
    tracer: WireTracer | None = None,
    unread: bytes = b"",
    ended: bool = False,
) -> LineTransport:
    """A LineTransport reading `read_fd` and writing `write_fd` without blocking the loop.

    Pipes, sockets and terminals (how editors and people start us) go through the event
    loop. What epoll refuses is read in a thread: a regular file (then read as a script,
    one request at a time) and /dev/null (ends at once).

    `unread`: bytes already taken from `read_fd` (early_hello.py), read before the rest;
    `ended`: the input ended after them, so `read_fd` is not read again.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
    reader.feed_data(unread)
    script = stat.S_ISREG(os.fstat(read_fd).st_mode)
    if ended:
        reader.feed_eof()
    elif script or not _pollable(read_fd):
        _feed_in_thread(loop, reader, read_fd)
    else:
        read_file = os.fdopen(read_fd, "rb", buffering=0, closefd=False)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), read_file)

    write_file = os.fdopen(write_fd, "wb", buffering=0, closefd=False)
    try:
        _, writer = await loop.connect_write_pipe(lambda: PipeWriter(loop), write_file)
    except ValueError:  # not a pipe, socket or terminal: written without the loop
        line_transport = LineTransport(reader, _blocking_writer(write_fd), tracer=tracer)
    else:
        line_transport = LineTransport(reader, writer.write, tracer=tracer, on_close=writer.close)
    line_transport.one_at_a_time = script
    return line_transport


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch `fd` (epoll refuses regular files and /dev/null;
    asyncio would only find out in a callback, leaving a traceback and a reader that
    never wakes)."""
    import select

    if not hasattr(select, "epoll"):
        return not stat.S_ISREG(os.fstat(fd).st_mode)
    poller = select.epoll()
    try:
        poller.register(fd, select.EPOLLIN)
    except OSError:
        return False
    finally:
        poller.close()
    return True


def _feed_in_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    import threading

    def pump() -> None:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                loop.call_soon_threadsafe(reader.feed_eof)
                return
            loop.call_soon_threadsafe(reader.feed_data, data)

    threading.Thread(target=pump, name="hermes-acp-stdin", daemon=True).start()


def _blocking_writer(fd: int) -> Callable[[bytes], Awaitable[None]]:
    async def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    return write
