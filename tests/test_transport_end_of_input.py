"""The transport's end of input and ordering rules, on an in-memory stream."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hermes_acp.server import session_named, session_opened
from hermes_acp.transport import NO_CLIENT, LineTransport


class Loopback:
    def __init__(self, *lines: dict[str, Any]) -> None:
        self.reader = asyncio.StreamReader()
        self.written: list[dict[str, Any]] = []

        async def write(data: bytes) -> None:
            self.written.append(json.loads(data))

        self.transport = LineTransport(self.reader, write)
        # the server's rule: a request naming a session being loaded waits for that answer
        self.transport.opens, self.transport.needs = session_opened, session_named
        for line in lines:
            self.feed(line)

    def feed(self, message: dict[str, Any]) -> None:
        self.reader.feed_data(json.dumps(message).encode() + b"\n")


async def let_the_loop_run() -> None:
    """In-memory streams need no I/O: a few turns of the loop let a task go as far as it can."""
    for _ in range(20):
        await asyncio.sleep(0)


def request(request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def test_at_end_of_input_our_open_requests_are_answered_for_the_client_then_settle_is_awaited() -> None:
    loop = Loopback()
    settled = asyncio.Event()

    async def settle() -> None:
        # While settling, the server still asks; the transport answers for the absent client.
        await loop.transport.send(request(8, "session/request_permission"))
        settled.set()

    loop.transport.settle = settle
    await loop.transport.send(request(7, "session/request_permission"))
    loop.reader.feed_eof()
    first = await loop.transport.receive()
    assert first == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": NO_CLIENT, "message": first["error"]["message"]},
    }
    second = await loop.transport.receive()
    assert second["id"] == 8 and second["error"]["code"] == NO_CLIENT
    assert await loop.transport.receive() is None
    assert settled.is_set()
    assert [m["id"] for m in loop.written] == [7]  # the one asked after the end never went out


async def test_a_request_about_a_session_being_resumed_waits_for_the_resume_answer() -> None:
    loop = Loopback(
        request(1, "session/resume", sessionId="s1", cwd="/"),
        request(2, "session/prompt", sessionId="s1", prompt=[]),
    )
    assert (await loop.transport.receive())["id"] == 1
    held = asyncio.create_task(loop.transport.receive())
    await let_the_loop_run()
    assert not held.done()
    await loop.transport.send({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert (await held)["id"] == 2


async def test_a_request_about_another_session_is_not_held() -> None:
    loop = Loopback(
        request(1, "session/resume", sessionId="s1", cwd="/"),
        request(2, "session/prompt", sessionId="s2", prompt=[]),
    )
    assert (await loop.transport.receive())["id"] == 1
    assert (await loop.transport.receive())["id"] == 2


async def test_a_script_runs_one_request_at_a_time_and_refuses_what_the_server_asks() -> None:
    loop = Loopback(request(1, "initialize"), request(2, "session/list"))
    loop.transport.one_at_a_time = True
    assert (await loop.transport.receive())["id"] == 1
    second = asyncio.create_task(loop.transport.receive())
    await loop.transport.send(request(0, "session/request_permission"))
    refused = await second  # the refusal comes first; request 2 still waits
    assert refused["id"] == 0 and refused["error"]["code"] == NO_CLIENT
    third = asyncio.create_task(loop.transport.receive())
    await let_the_loop_run()
    assert not third.done()
    await loop.transport.send({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert (await third)["id"] == 2


async def test_stop_without_settling_ends_at_once() -> None:
    loop = Loopback()
    never = asyncio.Event()
    loop.transport.settle = never.wait
    receiving = asyncio.create_task(loop.transport.receive())
    await let_the_loop_run()
    loop.transport.stop(settle=False)
    assert await receiving is None
