"""The line transport over real pipes: bad input is answered and serving goes on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_acp.startup.fd_transport import open_fd_transport
from hermes_acp.transport import LineTransport, current_request_id, encode


class Pipes:
    """The client's view: write to the transport's input, read its output."""

    def __init__(self) -> None:
        self.in_read, self.in_write = os.pipe()
        self.out_read, self.out_write = os.pipe()
        self._buffer = b""

    def write(self, data: bytes) -> None:
        os.write(self.in_write, data)

    def close_input(self) -> None:
        os.close(self.in_write)

    async def read_message(self, within: float = 2.0) -> dict:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while b"\n" not in self._buffer:
            remaining = deadline - loop.time()
            assert remaining > 0, "no output from the transport"
            chunk = await asyncio.wait_for(asyncio.to_thread(os.read, self.out_read, 65536), remaining)
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


@pytest.fixture
async def pipes() -> AsyncIterator[tuple[Pipes, LineTransport]]:
    p = Pipes()
    transport = await open_fd_transport(p.in_read, p.out_write)
    yield p, transport
    await transport.close()
    for fd in (p.in_read, p.out_read, p.out_write):
        os.close(fd)
    with contextlib.suppress(OSError):  # closed by the test already
        os.close(p.in_write)


VALID = {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {}}


@pytest.mark.parametrize(
    ("raw", "code", "echoed_id"),
    [
        (b"{not json", -32700, None),
        (b"\xff\xfe{}", -32700, None),
        (b"[1, 2]", -32600, None),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, None),
        (b"42", -32600, None),
        (b'"hello"', -32600, None),
        (b"null", -32600, None),
        (b'{"jsonrpc": "2.0", "id": 3}', -32600, 3),
        (b'{"jsonrpc": "2.0", "id": "x", "method": 5}', -32600, "x"),
        (b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}', -32600, 4),
        (b'{"id": 5, "method": "ping"}', -32600, 5),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": 3}', -32600, 6),
    ],
)
async def test_bad_input_is_answered_and_the_next_message_still_arrives(
    pipes: tuple[Pipes, LineTransport], raw: bytes, code: int, echoed_id: object
) -> None:
    p, transport = pipes
    p.write(raw + b"\n" + json.dumps(VALID).encode() + b"\n")
    message = await asyncio.wait_for(transport.receive(), 30)
    assert message == VALID
    reply = await p.read_message()
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == echoed_id
    assert reply["error"]["code"] == code
    assert reply["error"]["data"]["details"]


async def test_responses_and_notifications_pass_through(pipes: tuple[Pipes, LineTransport]) -> None:
    p, transport = pipes
    messages = [
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}},
        {"jsonrpc": "2.0", "id": None, "method": "odd-but-valid"},
    ]
    p.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    for expected in messages:
        assert await asyncio.wait_for(transport.receive(), 30) == expected


async def test_blank_lines_and_crlf_are_tolerated(pipes: tuple[Pipes, LineTransport]) -> None:
    p, transport = pipes
    p.write(b"\n   \n" + json.dumps(VALID).encode() + b"\r\n")
    assert await asyncio.wait_for(transport.receive(), 30) == VALID


async def test_end_of_input_is_none(pipes: tuple[Pipes, LineTransport]) -> None:
    p, transport = pipes
    p.write(json.dumps(VALID).encode())  # the last line may lack its newline
    p.close_input()
    assert await asyncio.wait_for(transport.receive(), 30) == VALID
    assert await asyncio.wait_for(transport.receive(), 30) is None


async def test_an_oversized_line_is_refused_and_serving_goes_on() -> None:
    p = Pipes()
    base = await open_fd_transport(p.in_read, p.out_write)
    small = LineTransport(base._reader, base._write, max_line_bytes=1000)
    p.write(b'{"x": "' + b"a" * 5000 + b'"}\n' + json.dumps(VALID).encode() + b"\n")
    assert await asyncio.wait_for(small.receive(), 30) == VALID
    reply = await p.read_message()
    assert reply["error"]["code"] == -32700
    assert "over the limit" in reply["error"]["data"]["details"]
    for fd in (p.in_read, p.in_write, p.out_read, p.out_write):
        os.close(fd)


async def test_large_messages_cross_the_reader_buffer(pipes: tuple[Pipes, LineTransport]) -> None:
    p, transport = pipes
    big = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"data": "x" * 3_000_000}}
    writer = asyncio.create_task(asyncio.to_thread(p.write, json.dumps(big).encode() + b"\n"))
    assert await asyncio.wait_for(transport.receive(), 5) == big
    await writer


async def test_sent_messages_are_single_lines_of_utf8(pipes: tuple[Pipes, LineTransport]) -> None:
    p, transport = pipes
    message = {"jsonrpc": "2.0", "method": "n", "params": {"text": "line one\nline two — ünïcödé \u2028"}}
    await transport.send(message)
    assert await p.read_message() == message
    assert encode({"s": "\ud800"}).decode("ascii")  # a lone surrogate is escaped, not a crash
    assert encode(message).count(b"\n") == 1


async def test_after_response_runs_once_the_response_is_written(pipes: tuple[Pipes, LineTransport]) -> None:
    p, transport = pipes
    p.write(json.dumps({"jsonrpc": "2.0", "id": "req-1", "method": "session/new"}).encode() + b"\n")
    await transport.receive()
    assert current_request_id.get() == "req-1"
    ran: list[str] = []

    async def hook() -> None:
        ran.append("hook")
        await transport.send({"jsonrpc": "2.0", "method": "after", "params": {}})

    transport.after_response(hook)
    transport.after_response(lambda: ran.append("second"))
    await transport.send({"jsonrpc": "2.0", "method": "before", "params": {}})
    assert ran == []
    await transport.send({"jsonrpc": "2.0", "id": 1, "result": {}})  # another id: not ours
    assert ran == []
    await transport.send({"jsonrpc": "2.0", "id": "req-1", "result": {"sessionId": "s"}})
    assert ran == ["hook", "second"]
    order = [await p.read_message() for _ in range(4)]
    assert [m.get("method") or m["id"] for m in order] == ["before", 1, "req-1", "after"]


async def test_after_response_binds_to_the_handler_task_of_its_request(
    pipes: tuple[Pipes, LineTransport],
) -> None:
    """Handler tasks are created right after receive(): each sees its own request id."""
    p, transport = pipes
    p.write(b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "m"}).encode() + b"\n" for i in (1, 2)))
    seen = []
    for _ in range(2):
        await transport.receive()
        seen.append(asyncio.create_task(_current_id()))
    assert [await t for t in seen] == [1, 2]


async def _current_id() -> object:
    await asyncio.sleep(0)
    return current_request_id.get()


async def test_input_from_a_regular_file(tmp_path: Path) -> None:
    source = tmp_path / "input.jsonl"
    source.write_bytes(json.dumps(VALID).encode() + b"\nnot json\n")
    out_read, out_write = os.pipe()
    fd = os.open(source, os.O_RDONLY)
    transport = await open_fd_transport(fd, out_write)
    assert await asyncio.wait_for(transport.receive(), 30) == VALID
    assert await asyncio.wait_for(transport.receive(), 30) is None
    reply = json.loads(os.read(out_read, 65536).split(b"\n")[0])
    assert reply["error"]["code"] == -32700
    for f in (fd, out_read, out_write):
        os.close(f)
