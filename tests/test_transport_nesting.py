"""Deeply nested JSON is answered with an error and the server keeps serving (a
RecursionError used to end it)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.transport import INVALID_REQUEST, MAX_DEPTH, PARSE_ERROR, LineTransport
from tests.support.acp_harness import server_env, spawn_server

VALID = {"jsonrpc": "2.0", "id": "after", "method": "ping", "params": {}}


def nested(depth: int, rng: random.Random) -> str:
    """`depth` levels of arrays and objects, mixed at random, innermost a number."""
    opened: list[str] = []
    for _ in range(depth):
        opened.append(rng.choice(("[", '{"k":')))
    closing = "".join("]" if o == "[" else "}" for o in reversed(opened))
    return "".join(opened) + "1" + closing


def message_around(inner: str, rng: random.Random) -> str:
    """The nested value where a fuzzer would put it: the whole line, params, or an id."""
    where = rng.choice(("line", "params", "meta"))
    if where == "line":
        return inner
    if where == "params":
        return '{"jsonrpc":"2.0","id":3,"method":"initialize","params":' + inner + "}"
    return '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"_meta":' + inner + "}}"


class Loopback:
    """A LineTransport fed from memory; what it writes is collected."""

    def __init__(self) -> None:
        self.reader = asyncio.StreamReader(limit=1024 * 1024)
        self.written: list[dict[str, Any]] = []

        async def write(data: bytes) -> None:
            self.written.append(json.loads(data))

        self.transport = LineTransport(self.reader, write)


@pytest.mark.parametrize("seed", range(12))
async def test_fuzzed_nesting_from_1_000_to_100_000_levels_is_answered_and_serving_goes_on(seed: int) -> None:
    rng = random.Random(seed)
    depths = [1000, 100_000, *(rng.randint(1000, 100_000) for _ in range(3))]
    loop = Loopback()
    for depth in depths:
        loop.reader.feed_data(message_around(nested(depth, rng), rng).encode() + b"\n")
    loop.reader.feed_data(json.dumps(VALID).encode() + b"\n")
    loop.reader.feed_eof()
    assert await loop.transport.receive() == VALID
    assert len(loop.written) == len(depths)
    for answer in loop.written:
        assert answer["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)
        assert "nested" in answer["error"]["data"]["details"]
    assert await loop.transport.receive() is None


async def test_nesting_up_to_the_limit_is_accepted_and_one_more_level_is_not() -> None:
    rng = random.Random(0)
    loop = Loopback()
    # The message object is level 1 and params level 2: MAX_DEPTH - 2 more levels fit.
    fits = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":' + nested(MAX_DEPTH - 2, rng) + "}}"
    too_deep = '{"jsonrpc":"2.0","id":2,"method":"m","params":{"k":' + nested(MAX_DEPTH - 1, rng) + "}}"
    loop.reader.feed_data(fits.encode() + b"\n" + too_deep.encode() + b"\n")
    loop.reader.feed_eof()
    assert (await loop.transport.receive())["id"] == 1
    assert await loop.transport.receive() is None
    assert [(w["id"], w["error"]["code"]) for w in loop.written] == [(2, INVALID_REQUEST)]


@pytest.mark.parametrize("depth", [1000, 100_000])
async def test_the_server_answers_deep_nesting_and_keeps_serving(tmp_path: Path, depth: int) -> None:
    rng = random.Random(depth)
    async with spawn_server(server_env(tmp_path)) as server:
        for where in ("line", "params"):
            line = nested(depth, rng) if where == "line" else message_around(nested(depth, rng), rng)
            assert server.process.stdin is not None  # raw: the harness would parse it
            server.process.stdin.write(line.encode() + b"\n")
            await server.process.stdin.drain()
            answer = await server.next_message()
            assert answer["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)
        reply = await server.request(1, "initialize", {"protocolVersion": 1})
        assert reply["result"]["protocolVersion"] == 1
    assert "Traceback" not in server.stderr
