"""Newline-delimited JSON-RPC over a pair of file descriptors, surviving bad input.

`LineTransport` is a message-level transport for `acp.connection.Connection`
(`send(dict)`, `receive() -> dict | None`, `close()`). It answers what the
connection must never see itself and keeps serving:

- bytes that are not UTF-8, or text that is not JSON -> -32700 with `id: null`;
- JSON that is not an object (a batch array, a number, a string) -> -32600;
- an object that is neither a request/notification (string `method`) nor a
  response (`id` plus `result` or `error`), or carries a wrong `jsonrpc` -> -32600,
  echoing its id when it has a usable one.

It also knows when a response has really been written, so a handler can ask for
work to run right after its own response (`after_response`): `session/new` sends
`available_commands_update` only once the client knows the session id.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MAX_LINE_BYTES = 64 * 1024 * 1024  # a prompt with a few large images fits; a runaway line does not
_READ_LIMIT = 1024 * 1024

JsonRpcId = str | int | None
AfterResponse = Callable[[], Awaitable[None] | None]

# The id of the request whose handler is running. The connection creates each
# handler's task right after `receive()` returns its message, and a task copies the
# context it was created in, so each handler sees the id of its own request.
current_request_id: contextvars.ContextVar[JsonRpcId] = contextvars.ContextVar(
    "current_request_id", default=None
)
_NO_ID = object()


class WireTracer(Protocol):
    def incoming(self, message: Any) -> None: ...

    def outgoing(self, message: Any) -> None: ...


class LineTransport:
    """One JSON object per line on `reader` / `writer` (asyncio streams)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        write: Callable[[bytes], Awaitable[None]],
        *,
        tracer: WireTracer | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._reader = reader
        self._write = write
        self._tracer = tracer
        self._max_line_bytes = max_line_bytes
        self._on_close = on_close
        self._after: dict[Any, list[AfterResponse]] = {}
        self._closed = False

    # -- the Transport protocol ------------------------------------------------------

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            message = await self._accept(line)
            if message is not None:
                request_id = message.get("id") if "method" in message else None
                current_request_id.set(request_id)
                return message

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("transport closed")
        await self._write(encode(message))
        if self._tracer is not None:
            self._tracer.outgoing(message)
        if self._after and "method" not in message and "id" in message:
            await self._run_after(message["id"])

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._after.clear()
        if self._on_close is not None:
            await self._on_close()

    # -- hooks -------------------------------------------------------------------------

    def after_response(self, callback: AfterResponse, request_id: Any = _NO_ID) -> None:
        """Run `callback` once the response to `request_id` (default: the request being
        handled now) has been written. Runs inline in the sending task, so it goes out
        before anything that task sends next."""
        key = current_request_id.get() if request_id is _NO_ID else request_id
        self._after.setdefault(_key(key), []).append(callback)

    async def _run_after(self, request_id: Any) -> None:
        for callback in self._after.pop(_key(request_id), ()):
            try:
                result = callback()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("after-response hook for request %r failed", request_id)

    # -- input -------------------------------------------------------------------------

    async def _read_line(self) -> bytes | None:
        """The next line without its newline; None at end of input. A line over the size
        limit is skipped and answered with a parse error."""
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    chunks.append(exc.partial)
                    size += len(exc.partial)
                    if size <= self._max_line_bytes:
                        return b"".join(chunks)
                return None if not chunks else await self._too_long(size)
            except asyncio.LimitOverrunError as exc:
                chunk = await self._reader.readexactly(exc.consumed)
                size += len(chunk)
                if size <= self._max_line_bytes:
                    chunks.append(chunk)
                continue
            size += len(chunk)
            if size > self._max_line_bytes:
                return await self._too_long(size)
            chunks.append(chunk)
            return b"".join(chunks)

    async def _too_long(self, size: int) -> bytes:
        await self._reject(PARSE_ERROR, "Parse error", None, f"message of {size:,} bytes is over the limit")
        return b""

    async def _accept(self, line: bytes) -> dict[str, Any] | None:
        """The message in `line`, or None after answering (or skipping) it."""
        line = line.strip()
        if not line:
            return None
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._trace_raw(line)
            await self._reject(PARSE_ERROR, "Parse error", None, f"not valid UTF-8: {exc.reason}")
            return None
        try:
            message = json.loads(text)
        except ValueError as exc:
            self._trace_raw(line)
            await self._reject(PARSE_ERROR, "Parse error", None, f"not valid JSON: {exc}")
            return None
        if self._tracer is not None:
            self._tracer.incoming(message)
        problem = _problem(message)
        if problem is None:
            return message
        request_id = message.get("id") if isinstance(message, dict) else None
        if not _valid_id(request_id):
            request_id = None
        await self._reject(INVALID_REQUEST, "Invalid request", request_id, problem)
        return None

    async def _reject(self, code: int, message: str, request_id: JsonRpcId, details: str) -> None:
        log.warning("rejected input: %s", details)
        error = {"code": code, "message": message, "data": {"details": details}}
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def _trace_raw(self, line: bytes) -> None:
        if self._tracer is not None:
            self._tracer.incoming({"unparsed": line.decode("utf-8", errors="backslashreplace")})


def _problem(message: Any) -> str | None:
    """Why `message` is not a JSON-RPC 2.0 message we can route, or None."""
    if isinstance(message, list):
        return "batch requests are not supported; send one JSON object per line"
    if not isinstance(message, dict):
        return f"a message must be a JSON object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'a message must carry "jsonrpc": "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return '"id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return '"params" must be an object'
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return 'a message needs a string "method", or an "id" with a "result" or an "error"'


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _key(request_id: Any) -> tuple[type, Any]:
    # 1 and "1" are different ids
    return (type(request_id), request_id)


def encode(message: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON. (json escapes newlines inside strings, so a message is
    always exactly one line.)"""
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: let json escape it
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


# -- wiring to real file descriptors -------------------------------------------------------


async def open_fd_transport(
    read_fd: int, write_fd: int, *, tracer: WireTracer | None = None
) -> LineTransport:
    """A LineTransport reading `read_fd` and writing `write_fd` without blocking the loop.

    Pipes and sockets (how editors spawn us) go through the event loop; a regular file
    (a test redirecting input) is read in a thread and written directly.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_LIMIT, loop=loop)
    read_file = os.fdopen(read_fd, "rb", buffering=0, closefd=False)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), read_file)
    except ValueError:
        _feed_in_thread(loop, reader, read_fd)

    write_file = os.fdopen(write_fd, "wb", buffering=0, closefd=False)
    try:
        transport, protocol = await loop.connect_write_pipe(lambda: _WriteProtocol(loop), write_file)
    except ValueError:
        return LineTransport(reader, _blocking_writer(write_fd), tracer=tracer)

    async def write(data: bytes) -> None:
        if transport.is_closing():
            raise ConnectionError("output closed")
        transport.write(data)
        await protocol.drain()

    async def close() -> None:
        # close() writes out what the pipe has not taken yet (the last responses) before
        # it lets go of the fd; wait for that, a little.
        transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(protocol.lost.wait(), 2.0)

    return LineTransport(reader, write, tracer=tracer, on_close=close)


class _WriteProtocol(asyncio.Protocol):
    """Flow control for the output pipe: `drain()` waits while the client is not reading."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost = False
        self.lost = asyncio.Event()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.lost.set()
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def drain(self) -> None:
        if self._lost:
            raise ConnectionError("output closed")
        if not self._paused:
            return
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        await waiter
        if self._lost:
            raise ConnectionError("output closed")


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
