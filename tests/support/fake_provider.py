"""A scripted model provider: a real HTTP server on 127.0.0.1 for the whole test suite.

Each model request (`/chat/completions`, `/responses`, `/messages`, with or without a
`/v1` prefix, and Bedrock's `/model/{id}/converse-stream`, see fake_bedrock.py) takes
the next `Reply` from the script and renders it in that endpoint's
wire format: Server-Sent Events when the request asked for a stream, plain JSON
otherwise. `GET /models` lists `fake.models` in the shape of the API that asked.

    with FakeProvider() as fake:
        fake.script([Reply(text="hello"), Reply.rate_limited(0.05)])
        ...  # point an SDK at fake.openai_base_url / fake.anthropic_base_url
        fake.wait_for_requests(2, timeout=5)
        fake.requests[0].body["messages"]

Streams use `Transfer-Encoding: chunked`; a `drop_after` reply closes the socket
without the final chunk (the client sees a broken body), or, with `drop_cleanly`,
ends the HTTP body properly but without the API's own terminator events. A
`stream_error` reply ends its stream with the API's in-stream error event instead;
`raw_stream` sends bytes verbatim, for wire-level oddities (CRLF, comments, bad JSON).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from tests.support import fake_bedrock

__all__ = ["FakeProvider", "RecordedRequest", "Reply", "ToolCallSpec"]


@dataclass(slots=True)
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str  # a str is sent verbatim (to test invalid JSON)
    id: str | None = None
    # chat completions only: sent on the call's first delta, as Gemini's OpenAI-compatible
    # endpoint sends {"google": {"thought_signature": ...}}
    extra_content: dict[str, Any] | None = None


@dataclass(slots=True)
class Reply:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    # None -> "tool_calls" if tool_calls else "stop"; also "length", "refusal", "content_filter"
    finish_reason: str | None = None
    chunk_size: int = 0  # 0 = a few natural pieces; tool arguments always arrive in >= 2 pieces
    chunk_delay: float = 0.0
    usage: tuple[int, int, int] = (10, 5, 0)  # input (all, cached included), output, cached input
    # chat completions only: "reasoning_content" | "reasoning" | "think_tags"
    reasoning_field: str = "reasoning_content"
    status: int = 200
    error_body: dict[str, Any] | None = None  # sent verbatim; None -> the API's own error shape
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None  # close the connection after this many SSE events
    stall: float = 0.0  # after headers and the first event, go silent this long
    delay: float = 0.0  # wait this long before sending headers
    drop_cleanly: bool = False  # with drop_after: end the HTTP body properly, API terminator missing
    error_kind: str | None = None  # "rate_limit" | "server" | "auth" | "context_overflow" | "overloaded"
    error_message: str | None = None
    # A 200 stream that reports an error after its deltas, in the API's own in-stream form,
    # instead of finishing: an error kind as above (error_message is its text).
    stream_error: str | None = None
    stream_error_event: str = "error"  # responses only: "error" or "response.failed"
    # Sent verbatim as the streamed body, one HTTP chunk each, instead of rendering the reply.
    raw_stream: list[bytes] | None = None
    # The whole rendered stream written at once, one HTTP chunk (as a fast model's events
    # pile up between two reads of a busy client).
    one_write: bool = False
    # Each event its own HTTP chunk, but every chunk written in one go: a fast model whose
    # deltas, one chunk each, pile up between two reads of a busy client.
    chunks_in_one_write: bool = False
    # After the event that carries the text's first piece, wait until the test calls
    # `release_stream()` (each such reply waits for a release of its own).
    hold_after_first_text: bool = False

    @classmethod
    def rate_limited(cls, retry_after: float | None = 0.05) -> Reply:
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        return cls(
            status=429,
            headers=headers,
            error_kind="rate_limit",
            error_message="Rate limit reached for requests. Please try again later.",
        )

    @classmethod
    def server_error(cls) -> Reply:
        return cls(status=500, error_kind="server", error_message="The server had an error.")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls(status=401, error_kind="auth", error_message="Incorrect API key provided: test-key.")

    @classmethod
    def context_overflow(cls) -> Reply:
        return cls(status=400, error_kind="context_overflow")

    @classmethod
    def overloaded(cls) -> Reply:
        """529 on the Anthropic endpoint, 503 on the others."""
        return cls(status=503, error_kind="overloaded", error_message="Overloaded")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any]
    time: float  # time.monotonic() when the request arrived
    raw: bytes = b""  # the body as it came over the wire, byte for byte


_BEDROCK = "/converse-stream"
_BEDROCK_STREAM = re.compile(r"/model/[^/]+/converse-stream")
_ENDPOINTS = ("/chat/completions", "/responses", "/messages", _BEDROCK)
_EXHAUSTED = Reply(status=500, error_body={"error": {"message": "fake provider: script exhausted"}})


def _route(path: str) -> str:
    """ "/v1/chat/completions", "/chat/completions", "/v1/v1/messages" -> the bare endpoint."""
    path = path.split("?", 1)[0].rstrip("/")
    while path.startswith("/v1/") or path == "/v1":
        path = path[3:]
    return path


class FakeProvider:
    def __init__(self) -> None:
        self.models: list[str] = []
        self._queue: list[Reply] = []
        # Replies for requests whose first user message contains the key (parallel
        # subagents, whose calls arrive in no fixed order); the rest take from the queue.
        self._routes: dict[str, list[Reply]] = {}
        self._requests: list[RecordedRequest] = []
        self._disconnects = 0
        self._models_served = 0
        self._models_open = threading.Event()  # cleared by hold_models(): GET /models waits
        self._models_open.set()
        self._changed = threading.Condition()
        self._stream_releases = threading.Semaphore(0)
        self._closing = threading.Event()
        self._sockets: set[socket.socket] = set()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self.port: int = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.openai_base_url = self.url  # the openai SDK appends "/chat/completions", ...
        self.anthropic_base_url = f"http://127.0.0.1:{self.port}"  # it appends "/v1/messages"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="fake-provider", daemon=True
        )
        self._thread.start()

    # -- scripting ---------------------------------------------------------------------

    def script(self, replies: list[Reply]) -> None:
        with self._changed:
            self._queue = list(replies)
            self._routes = {}

    def forget(self) -> None:
        """No script and no recorded requests: a fresh start for the next test on this fake."""
        with self._changed:
            self._queue = []
            self._routes = {}
            self._requests = []

    def route(self, key: str, replies: list[Reply]) -> None:
        with self._changed:
            self._routes[key] = list(replies)

    def add(self, reply: Reply) -> None:
        with self._changed:
            self._queue.append(reply)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._changed:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._changed:
            return len(self._queue)

    @property
    def disconnects(self) -> int:
        """Streams whose client hung up before the reply was complete."""
        with self._changed:
            return self._disconnects

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"expected {n} model requests, got {len(self._requests)}")
            return list(self._requests)

    @property
    def open_connections(self) -> int:
        """Client connections open now (an SDK's pool keeps them between requests)."""
        with self._changed:
            return len(self._sockets)

    def wait_for_open_connections(self, n: int, timeout: float = 5.0) -> None:
        """Until exactly n client connections are open (the client closed the others)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._sockets) == n, timeout):
                raise TimeoutError(f"expected {n} open connections, got {len(self._sockets)}")

    def hold_models(self) -> None:
        """GET /models waits until release_models(): a model-list refresh lands when a test says."""
        self._models_open.clear()

    def release_models(self) -> None:
        self._models_open.set()

    def wait_for_models_served(self, n: int, timeout: float = 5.0) -> None:
        """Until n model lists have been sent (written to the socket)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._models_served >= n, timeout):
                raise TimeoutError(f"expected {n} model lists served, got {self._models_served}")

    def release_stream(self) -> None:
        """One held stream goes on with its next event."""
        self._stream_releases.release()

    def _hold(self) -> bool:
        """A stream's hold (`hold_after_first_text`): until released; False when the server closes."""
        while not self._stream_releases.acquire(timeout=0.05):
            if self._closing.is_set():
                return False
        return True

    def wait_for_disconnects(self, n: int, timeout: float = 5.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._disconnects >= n, timeout):
                raise TimeoutError(f"expected {n} client disconnects, got {self._disconnects}")

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        if self._closing.is_set():
            return
        self._closing.set()  # wakes handlers sleeping in delay/stall/chunk_delay
        self._models_open.set()
        self._server.shutdown()
        self._server.server_close()
        with self._changed:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- used by the handler -----------------------------------------------------------

    def _take(self, request: RecordedRequest) -> Reply:
        with self._changed:
            self._requests.append(request)
            first = _first_user_text(request.body)
            routed = next((queue for key, queue in self._routes.items() if key in first), None)
            if routed is not None:
                reply = routed.pop(0) if routed else _EXHAUSTED
            else:
                reply = self._queue.pop(0) if self._queue else _EXHAUSTED
            self._changed.notify_all()
            return reply

    def _note_disconnect(self) -> None:
        with self._changed:
            self._disconnects += 1
            self._changed.notify_all()

    def _track(self, sock: socket.socket, active: bool) -> None:
        with self._changed:
            if active:
                self._sockets.add(sock)
            else:
                self._sockets.discard(sock)
            self._changed.notify_all()

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server is closing; False when it is."""
        if seconds > 0:
            self._closing.wait(seconds)
        return not self._closing.is_set()


class _Disconnected(Exception):
    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default listen backlog is 5: fifty sessions connecting at once overflow
    # it and the kernel drops their SYNs, which the client resends only after a second.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up, or close() cutting a connection: not worth a traceback


class _Handler(BaseHTTPRequestHandler):
    fake: ClassVar[FakeProvider]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: stdout/stderr stay clean
        pass

    def setup(self) -> None:
        super().setup()
        # Each SSE event is its own small write; without NODELAY, Nagle and delayed ACKs
        # add ~40 ms to every streamed reply, which no real provider does.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake._track(self.connection, True)

    def finish(self) -> None:
        self.fake._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        if _route(self.path) == "/foundation-models":
            self._send_json(200, fake_bedrock.model_list(self.fake.models))
            return
        if _route(self.path) != "/models":
            self._send_json(404, {"error": {"message": f"fake provider: no route {self.path}"}})
            return
        self.fake._models_open.wait()
        try:
            self._send_models()
        finally:
            with self.fake._changed:
                self.fake._models_served += 1
                self.fake._changed.notify_all()

    def _send_models(self) -> None:
        if "anthropic-version" in {k.lower() for k in self.headers}:
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                for m in self.fake.models
            ]
            first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
            self._send_json(200, {"data": data, "has_more": False, "first_id": first, "last_id": last})
        else:
            data = [
                {"id": m, "object": "model", "created": 1735689600, "owned_by": "fake"}
                for m in self.fake.models
            ]
            self._send_json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        endpoint = _route(self.path)
        if _BEDROCK_STREAM.fullmatch(endpoint):
            endpoint = _BEDROCK
            body = {**body, "stream": True}  # ConverseStream always streams
        if endpoint not in _ENDPOINTS:
            self._send_json(404, {"error": {"message": f"fake provider: no route {self.path}"}})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.fake._take(RecordedRequest(self.path, headers, body, time.monotonic(), raw))
        if not self.fake._sleep(reply.delay):
            return
        try:
            if reply.status >= 400:
                self._send_error_reply(endpoint, reply)
            elif body.get("stream"):
                self._send_stream(endpoint, reply, body)
            else:
                self._send_json(200, _render_json(endpoint, reply, body), reply.headers)
        except (_Disconnected, ConnectionError, TimeoutError):
            self.close_connection = True
            if not self.fake._closing.is_set():
                self.fake._note_disconnect()

    # -- writing -----------------------------------------------------------------------

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error_reply(self, endpoint: str, reply: Reply) -> None:
        if endpoint == _BEDROCK:
            status, payload, headers = fake_bedrock.error_reply(reply)
            self._send_json(status, reply.error_body or payload, {**headers, **reply.headers})
            return
        status = reply.status
        if reply.error_kind == "overloaded" and endpoint == "/messages":
            status = 529
        payload = reply.error_body if reply.error_body is not None else _error_body(endpoint, reply)
        self._send_json(status, payload, reply.headers)

    def _send_stream(self, endpoint: str, reply: Reply, body: dict[str, Any]) -> None:
        self.send_response(200)
        content_type = fake_bedrock.CONTENT_TYPE if endpoint == _BEDROCK else "text/event-stream"
        self.send_header("content-type", content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        events = _render_stream(endpoint, reply, body)
        if reply.one_write:
            events = iter([b"".join(events)])
        if reply.chunks_in_one_write:
            self.wfile.write(b"".join(b"%x\r\n%s\r\n" % (len(event), event) for event in events))
            events = iter(())
        first_text = (
            json.dumps(_pieces(reply.text, reply.chunk_size)[0])[1:-1].encode() if reply.text else b""
        )
        hold = reply.hold_after_first_text
        for count, event in enumerate(events):
            if reply.drop_after is not None and count >= reply.drop_after:
                break
            if count == 1 and reply.stall and not self.fake._sleep(reply.stall):
                raise _Disconnected
            if count > 0 and reply.chunk_delay and not self.fake._sleep(reply.chunk_delay):
                raise _Disconnected
            self._write_chunk(event)
            if hold and first_text in event:
                hold = False
                if not self.fake._hold():
                    raise _Disconnected
        if reply.drop_after is not None and not reply.drop_cleanly:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # no final chunk: a broken body
            return
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


# -- rendering: helpers ----------------------------------------------------------------


def _first_user_text(body: dict[str, Any]) -> str:
    """The first user message of a request, whatever the wire format, as text."""
    messages = body.get("messages") or body.get("input") or []
    if isinstance(messages, str):
        return messages
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return json.dumps(message.get("content"))
    return ""


def _pieces(text: str, size: int) -> list[str]:
    if not text:
        return []
    if size > 0:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\s*\S+\s*|\s+", text)  # words, spaces attached


def _argument_pieces(arguments: str, size: int) -> list[str]:
    if size > 0 and len(arguments) > size:
        return _pieces(arguments, size)
    if len(arguments) < 2:
        return [arguments, ""]
    third = max(1, len(arguments) // 3)
    return [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]


def _arguments_text(spec: ToolCallSpec) -> str:
    return spec.arguments if isinstance(spec.arguments, str) else json.dumps(spec.arguments)


def _call_id(spec: ToolCallSpec, index: int, prefix: str) -> str:
    return spec.id or f"{prefix}_{index}_{spec.name}"


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _signature(reasoning: str) -> str:
    return "sig-" + hashlib.sha256(reasoning.encode()).hexdigest()[:16]


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _overflow_message(endpoint: str) -> str:
    if endpoint == "/messages":
        return "prompt is too long: 210000 tokens > 200000 maximum"
    return (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. Please reduce the length of the messages."
    )


def _error_body(endpoint: str, reply: Reply) -> dict[str, Any]:
    kind = reply.error_kind or "server"
    message = reply.error_message or (
        _overflow_message(endpoint) if kind == "context_overflow" else f"fake provider error {reply.status}"
    )
    if endpoint == "/messages":
        anthropic_types = {
            "rate_limit": "rate_limit_error",
            "auth": "authentication_error",
            "context_overflow": "invalid_request_error",
            "overloaded": "overloaded_error",
        }
        return {
            "type": "error",
            "error": {"type": anthropic_types.get(kind, "api_error"), "message": message},
        }
    openai_types = {
        "rate_limit": ("requests", "rate_limit_exceeded"),
        "auth": ("invalid_request_error", "invalid_api_key"),
        "context_overflow": ("invalid_request_error", "context_length_exceeded"),
        "overloaded": ("server_error", "overloaded"),
    }
    err_type, code = openai_types.get(kind, ("server_error", None))
    return {"error": {"message": message, "type": err_type, "param": None, "code": code}}


_STREAM_ERROR_MESSAGES = {
    "rate_limit": "Rate limit reached for requests. Please try again later.",
    "server": "The server had an error while processing your request.",
    "auth": "Incorrect API key provided.",
    "overloaded": "Overloaded",
}


def _stream_error_body(endpoint: str, reply: Reply) -> dict[str, Any]:
    """The error object of an in-stream error, shaped like the API's error bodies."""
    kind = reply.stream_error or "server"
    message = reply.error_message or _STREAM_ERROR_MESSAGES.get(kind)
    return _error_body(endpoint, dataclasses.replace(reply, error_kind=kind, error_message=message))


def _render_stream(endpoint: str, reply: Reply, body: dict[str, Any]) -> Iterator[bytes]:
    if reply.raw_stream is not None:
        return iter([piece for piece in reply.raw_stream if piece])  # an empty chunk would end the body
    if endpoint == "/chat/completions":
        return _chat_stream(reply, body)
    if endpoint == "/messages":
        return _anthropic_stream(reply, body)
    if endpoint == _BEDROCK:
        return fake_bedrock.stream(reply, _pieces, _argument_pieces, _arguments_text, _call_id)
    return _responses_stream(reply, body)


def _render_json(endpoint: str, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    if endpoint == "/chat/completions":
        return _chat_json(reply, body)
    if endpoint == "/messages":
        return _anthropic_json(reply, body)
    return _responses_object(reply, body, "completed")


# -- chat completions ------------------------------------------------------------------


def _chat_usage(reply: Reply) -> dict[str, Any]:
    inp, out, cached = reply.usage
    return {
        "prompt_tokens": inp,
        "completion_tokens": out,
        "total_tokens": inp + out,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _chat_stream(reply: Reply, body: dict[str, Any]) -> Iterator[bytes]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1735689600}
    base["model"] = body.get("model", "fake-model")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.reasoning_field == "think_tags":
        content = (f"<think>{reply.reasoning}</think>" if reply.reasoning else "") + reply.text
        for piece in _pieces(content, reply.chunk_size or 4):  # small pieces split the tags
            yield chunk({"content": piece})
    else:
        for piece in _pieces(reply.reasoning, reply.chunk_size):
            yield chunk({reply.reasoning_field: piece})
        for piece in _pieces(reply.text, reply.chunk_size):
            yield chunk({"content": piece})
    for index, spec in enumerate(reply.tool_calls):
        head: dict[str, Any] = {"index": index, "id": _call_id(spec, index, "call"), "type": "function"}
        if spec.extra_content:
            head["extra_content"] = spec.extra_content
        yield chunk({"tool_calls": [{**head, "function": {"name": spec.name, "arguments": ""}}]})
        for piece in _argument_pieces(_arguments_text(spec), reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if reply.stream_error:
        yield _sse(_stream_error_body("/chat/completions", reply))  # OpenAI: a bare `error` object
        return
    yield chunk({}, _finish(reply))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield _sse({**base, "choices": [], "usage": _chat_usage(reply)})
    yield _sse("[DONE]")


def _chat_json(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        if reply.reasoning_field == "think_tags":
            message["content"] = f"<think>{reply.reasoning}</think>{reply.text}"
        else:
            message[reply.reasoning_field] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(spec, i, "call"),
                "type": "function",
                "function": {"name": spec.name, "arguments": _arguments_text(spec)},
            }
            for i, spec in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1735689600,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": _chat_usage(reply),
    }


# -- anthropic messages ----------------------------------------------------------------

_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "refusal": "refusal",
    "content_filter": "refusal",
}


def _anthropic_usage(reply: Reply) -> dict[str, int]:
    inp, out, cached = reply.usage
    return {
        "input_tokens": inp - cached,
        "output_tokens": out,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }


def _anthropic_stream(reply: Reply, body: dict[str, Any]) -> Iterator[bytes]:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return _sse({"type": name, **data}, name)

    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**_anthropic_usage(reply), "output_tokens": 1},
    }
    yield event("message_start", {"message": message})
    index = 0
    if reply.reasoning:
        yield event(
            "content_block_start",
            {"index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        )
        for piece in _pieces(reply.reasoning, reply.chunk_size):
            yield event(
                "content_block_delta",
                {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
            )
        signature = {"type": "signature_delta", "signature": _signature(reply.reasoning)}
        yield event("content_block_delta", {"index": index, "delta": signature})
        yield event("content_block_stop", {"index": index})
        index += 1
    if reply.text:
        yield event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
        for piece in _pieces(reply.text, reply.chunk_size):
            yield event(
                "content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}}
            )
        yield event("content_block_stop", {"index": index})
        index += 1
    for n, spec in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": _call_id(spec, n, "toolu"), "name": spec.name, "input": {}}
        yield event("content_block_start", {"index": index, "content_block": block})
        for piece in _argument_pieces(_arguments_text(spec), reply.chunk_size):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
        index += 1
    if reply.stream_error:
        yield _sse(_stream_error_body("/messages", reply), "error")
        return
    stop = _ANTHROPIC_STOP.get(_finish(reply), "end_turn")
    yield event(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": reply.usage[1]}},
    )
    yield event("message_stop", {})


def _anthropic_json(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append(
            {"type": "thinking", "thinking": reply.reasoning, "signature": _signature(reply.reasoning)}
        )
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for n, spec in enumerate(reply.tool_calls):
        try:
            arguments = json.loads(_arguments_text(spec))
        except ValueError:
            arguments = {}
        content.append(
            {"type": "tool_use", "id": _call_id(spec, n, "toolu"), "name": spec.name, "input": arguments}
        )
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": content,
        "stop_reason": _ANTHROPIC_STOP.get(_finish(reply), "end_turn"),
        "stop_sequence": None,
        "usage": _anthropic_usage(reply),
    }


# -- responses -------------------------------------------------------------------------


def _responses_output(reply: Reply) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if reply.reasoning:
        output.append(
            {
                "id": "rs_fake",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
                "encrypted_content": "enc-" + _signature(reply.reasoning),
            }
        )
    if reply.text:
        part_type = "refusal" if _finish(reply) == "refusal" else "output_text"
        part: dict[str, Any] = {
            "type": part_type,
            part_type if part_type == "refusal" else "text": reply.text,
        }
        if part_type == "output_text":
            part["annotations"] = []
        output.append(
            {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for n, spec in enumerate(reply.tool_calls):
        output.append(
            {
                "id": f"fc_{n}",
                "type": "function_call",
                "call_id": _call_id(spec, n, "call"),
                "name": spec.name,
                "arguments": _arguments_text(spec),
                "status": "completed",
            }
        )
    return output


def _responses_object(reply: Reply, body: dict[str, Any], status: str) -> dict[str, Any]:
    inp, out, cached = reply.usage
    incomplete = None
    if status == "incomplete":
        reason = "content_filter" if _finish(reply) == "content_filter" else "max_output_tokens"
        incomplete = {"reason": reason}
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 1735689600,
        "model": body.get("model", "fake-model"),
        "status": status,
        "incomplete_details": incomplete,
        "error": None,
        "output": _responses_output(reply) if status != "in_progress" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inp + out,
        }
        if status != "in_progress"
        else None,
    }


def _responses_stream(reply: Reply, body: dict[str, Any]) -> Iterator[bytes]:
    sequence = iter(range(1_000_000))

    def event(name: str, data: dict[str, Any]) -> bytes:
        return _sse({"type": name, "sequence_number": next(sequence), **data}, name)

    yield event("response.created", {"response": _responses_object(reply, body, "in_progress")})
    for index, item in enumerate(_responses_output(reply)):
        kind = item["type"]
        if kind == "reasoning":
            yield event(
                "response.output_item.added", {"output_index": index, "item": {**item, "summary": []}}
            )
            where = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            yield event(
                "response.reasoning_summary_part.added",
                {**where, "part": {"type": "summary_text", "text": ""}},
            )
            for piece in _pieces(reply.reasoning, reply.chunk_size):
                yield event("response.reasoning_summary_text.delta", {**where, "delta": piece})
            yield event("response.reasoning_summary_text.done", {**where, "text": reply.reasoning})
            yield event("response.reasoning_summary_part.done", {**where, "part": item["summary"][0]})
        elif kind == "message":
            part = item["content"][0]
            empty = {**part, part["type"] if part["type"] == "refusal" else "text": ""}
            yield event(
                "response.output_item.added", {"output_index": index, "item": {**item, "content": []}}
            )
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", {**where, "part": empty})
            delta_name = (
                "response.refusal.delta" if part["type"] == "refusal" else "response.output_text.delta"
            )
            for piece in _pieces(reply.text, reply.chunk_size):
                extra = {} if part["type"] == "refusal" else {"logprobs": []}
                yield event(delta_name, {**where, "delta": piece, **extra})
            if part["type"] == "refusal":
                yield event("response.refusal.done", {**where, "refusal": reply.text})
            else:
                yield event("response.output_text.done", {**where, "text": reply.text, "logprobs": []})
            yield event("response.content_part.done", {**where, "part": part})
        else:
            yield event(
                "response.output_item.added",
                {"output_index": index, "item": {**item, "arguments": "", "status": "in_progress"}},
            )
            where = {"item_id": item["id"], "output_index": index}
            for piece in _argument_pieces(item["arguments"], reply.chunk_size):
                yield event("response.function_call_arguments.delta", {**where, "delta": piece})
            yield event(
                "response.function_call_arguments.done",
                {**where, "arguments": item["arguments"], "name": item["name"]},
            )
        yield event("response.output_item.done", {"output_index": index, "item": item})
    if reply.stream_error:
        error = _stream_error_body("/responses", reply)["error"]
        code = error["code"] or error["type"]
        if reply.stream_error_event == "response.failed":
            failed = {
                **_responses_object(reply, body, "failed"),
                "error": {"code": code, "message": error["message"]},
            }
            yield event("response.failed", {"response": failed})
        else:
            yield event("error", {"code": code, "message": error["message"], "param": None})
        return
    if _finish(reply) in ("length", "content_filter"):
        yield event("response.incomplete", {"response": _responses_object(reply, body, "incomplete")})
    else:
        yield event("response.completed", {"response": _responses_object(reply, body, "completed")})
