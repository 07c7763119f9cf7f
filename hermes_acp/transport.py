"""Newline-delimited JSON-RPC over a pair of file descriptors, surviving bad input: what
each message runs (framing, checks, ordering) around one state. The output pipe's writer
is pipe_writer.py; start-up wiring hermes_acp/startup/fd_transport.py.

`LineTransport` is a message-level transport for `acp.connection.Connection`
(`send(dict)`, `receive() -> dict | None`, `close()`). It answers what the
connection must never see itself and keeps serving:

- bytes that are not UTF-8, or text that is not JSON -> -32700 with `id: null`;
- JSON that is not an object (a batch array, a number, a string) -> -32600;
- an object that is neither a request/notification (string `method`) nor a
  response (`id` plus `result` or `error`), or carries a wrong `jsonrpc` -> -32600,
  echoing its id when it has a usable one;
- JSON nested deeper than MAX_DEPTH levels -> -32600 (-32700 when too deep even to
  parse), instead of a RecursionError that would end the server.

It also knows when a response has really been written, so a handler can ask for
work to run right after its own response (`after_response`): `session/new` sends
`available_commands_update` only once the client knows the session id.

End of input is not the end of the work: `settle` (set by whoever runs the server)
is awaited before `receive()` reports the end, so a prompt a script piped in still
finishes. Meanwhile no client is left to answer what the server asks (a permission),
so each such request is answered here with an error, which the server treats as a
rejection. `stop()` (SIGTERM, SIGHUP) ends the input at once, unread lines and all.

A request may wait for an earlier one's answer: `opens(message)` names what a request
holds until it is answered, `needs(message)` what a request waits for (the server sets
both: a request naming a session whose `session/load` is in flight waits for that
answer, so a script may write both at once). A regular file is a script
(`one_at_a_time`): each request waits for the answer to the one before, and what the
server asks is refused at once, since a file cannot answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from hermes_acp.wire import encode

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
NO_CLIENT = -32099  # our own answer to a request nobody is left to answer (never on the wire)
MAX_DEPTH = 200  # no ACP message comes near; deeper input is rejected before anything recurses
MAX_LINE_BYTES = 64 * 1024 * 1024  # a prompt with a few large images fits; a runaway line does not

JsonRpcId = str | int | None
AfterResponse = Callable[[], Awaitable[None] | None]
# What a request makes later ones wait for, or waits for itself (None: nothing).
Ordering = Callable[[dict[str, Any]], str | None]

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
        # Awaited once input ends, before receive() says so (see the module docstring).
        self.settle: Callable[[], Awaitable[None]] | None = None
        # A regular file is a script: each request is answered before the next is read.
        self.one_at_a_time = False
        self.opens: Ordering = lambda message: None  # see the module docstring
        self.needs: Ordering = lambda message: None
        self._unanswered: dict[tuple[type, Any], str | None] = {}  # incoming request -> what it opens
        self._held: dict[str, Any] | None = None  # read, waiting for requests it depends on
        self._wake = asyncio.Event()  # an answer went out, or one of ours was refused
        self._asked: set[Any] = set()  # ids of our requests the client has not answered
        self._ended = False
        self._no_client: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._stop = asyncio.Event()  # the input ends now, whatever is still unread
        self._hurry = asyncio.Event()  # ...and without waiting for the work in flight
        self._reading: asyncio.Future[bytes | None] | None = None

    # -- the Transport protocol ------------------------------------------------------

    async def receive(self) -> dict[str, Any] | None:
        while True:
            if self._stop.is_set():
                return await self._end_of_input()
            if not self._no_client.empty():
                return self._no_client.get_nowait()
            if self._held is None:
                line = await self._next_line()
                if line is None:
                    return await self._end_of_input()
                message = await self._accept(line)
                if message is None:
                    continue
                if "method" not in message:
                    self._asked.discard(_key(message.get("id")))
                    return message
                self._held = message
            if self._must_wait(self._held):
                self._wake.clear()
                if self._must_wait(self._held) and self._no_client.empty():
                    await self._wake.wait()
                continue
            message, self._held = self._held, None
            request_id = message.get("id")
            if "id" in message:
                self._unanswered[_key(request_id)] = self.opens(message)
            current_request_id.set(request_id if "id" in message else None)
            return message

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("transport closed")
        is_request = "method" in message and "id" in message
        if is_request and (self._ended or self.one_at_a_time):
            self._refuse_for_absent_client(message)
            return
        try:
            await self._write(encode(message))
        except (ConnectionError, OSError):
            # Nobody reads what we write: nothing we do from now on can reach the client,
            # so the connection is over (a turn would run for nobody, a held request would
            # wait forever for an answer that cannot go out).
            if not self._hurry.is_set():
                log.warning("output closed: the client stopped reading; ending the connection")
            self.stop(settle=False)
            raise
        if self._tracer is not None:
            self._tracer.outgoing(message)
        if is_request:
            self._asked.add(_key(message["id"]))
        elif "method" not in message and "id" in message:
            if self._unanswered.pop(_key(message["id"]), _NO_ID) is not _NO_ID:
                self._wake.set()
            if self._after:
                await self._run_after(message["id"])

    def stop(self, *, settle: bool = True) -> None:
        """End the input now, as if it had ended (a signal); `settle=False` does not wait
        for the work in flight either."""
        if not settle:
            self._hurry.set()
        self._stop.set()
        self._wake.set()

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

    # -- ordering and the end of input ---------------------------------------------------

    async def _next_line(self) -> bytes | None:
        if self._stop.is_set():
            return None
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read_line())
        stopped = asyncio.ensure_future(self._stop.wait())
        either: set[asyncio.Future[Any]] = {self._reading, stopped}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not self._reading.done():
            return None
        reading, self._reading = self._reading, None
        return reading.result()

    def _must_wait(self, message: dict[str, Any]) -> bool:
        """Whether `message` must wait for requests in flight to be answered first."""
        if not self._unanswered:
            return False
        if self.one_at_a_time:
            return True
        needed = self.needs(message)
        return needed is not None and needed in self._unanswered.values()

    async def _end_of_input(self) -> dict[str, Any] | None:
        """None once the work in flight has settled; until then, our own answers to the
        requests the server sends the client that is no longer there."""
        if not self._ended:
            self._ended = True
            for request_id in self._asked:
                self._no_client.put_nowait(_no_client_error(request_id[1]))
            self._asked.clear()
            settling = self.settle() if self.settle is not None and not self._hurry.is_set() else None
            self._settled: asyncio.Future[Any] = asyncio.ensure_future(_awaited(settling))
        while not self._no_client.empty() or not self._settled.done():
            if not self._no_client.empty():
                return self._no_client.get_nowait()
            answer = asyncio.ensure_future(self._no_client.get())
            hurried = asyncio.ensure_future(self._hurry.wait())
            await asyncio.wait({answer, self._settled, hurried}, return_when=asyncio.FIRST_COMPLETED)
            hurried.cancel()
            if answer.done():
                return answer.result()
            answer.cancel()
            if self._hurry.is_set():
                self._settled.cancel()
                break
        return None

    def _refuse_for_absent_client(self, message: dict[str, Any]) -> None:
        log.warning("no client can answer %s (input ended, or a script); rejecting it", message["method"])
        if self._tracer is not None:
            self._tracer.outgoing(message)
        self._no_client.put_nowait(_no_client_error(message["id"]))
        self._wake.set()

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
        except RecursionError:
            self._trace_raw(line[:200])
            details = f"JSON nested too deeply to parse (the limit is {MAX_DEPTH} levels)"
            await self._reject(PARSE_ERROR, "Parse error", None, details)
            return None
        if _deeper_than(message, MAX_DEPTH):
            self._trace_raw(line[:200])
            request_id = message.get("id") if isinstance(message, dict) else None
            details = f"JSON nested deeper than {MAX_DEPTH} levels"
            await self._reject(
                INVALID_REQUEST, "Invalid request", request_id if _valid_id(request_id) else None, details
            )
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


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` containers deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _no_client_error(request_id: Any) -> dict[str, Any]:
    error = {"code": NO_CLIENT, "message": "No client: the input has ended, so nobody can answer"}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


async def _awaited(value: Awaitable[Any] | None) -> None:
    if value is not None:
        await value


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _key(request_id: Any) -> tuple[type, Any]:
    # 1 and "1" are different ids
    return (type(request_id), request_id)
