"""The output pipe writes what one turn of the event loop sends in one go, in order, and
loses nothing a close follows at once.

The client's end is a packet-mode pipe (O_DIRECT): each write the server makes is one
packet and each read returns one packet, so a read shows exactly what one write carried.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator

import pytest

from hermes_acp.startup.fd_transport import open_fd_transport
from hermes_acp.transport import LineTransport


class PacketPipes:
    def __init__(self) -> None:
        self.in_read, self.in_write = os.pipe()
        self.out_read, self.out_write = os.pipe2(os.O_DIRECT)

    async def one_write(self) -> list[dict]:
        """The messages of the next write the server made."""
        packet = await asyncio.to_thread(os.read, self.out_read, 65536)  # the write, or the end
        assert packet.endswith(b"\n"), f"not one whole write of messages: {packet!r}"
        return [json.loads(line) for line in packet.splitlines()]

    def close_output(self) -> None:
        """The server's end of its output: a read then ends instead of waiting."""
        os.close(self.out_write)
        self.out_write = -1

    def close(self) -> None:
        for fd in (self.in_read, self.in_write, self.out_read, self.out_write):
            if fd >= 0:
                os.close(fd)


@pytest.fixture
async def wired() -> AsyncIterator[tuple[PacketPipes, LineTransport]]:
    pipes = PacketPipes()
    transport = await open_fd_transport(pipes.in_read, pipes.out_write)
    yield pipes, transport
    await transport.close()
    pipes.close()


def note(n: int) -> dict:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"n": n}}


async def test_what_one_loop_turn_sends_goes_out_in_one_write(
    wired: tuple[PacketPipes, LineTransport],
) -> None:
    pipes, transport = wired
    answer = {"jsonrpc": "2.0", "id": 1, "result": {}}
    for n in range(3):  # one task, no wait between: one turn of the loop
        await transport.send(note(n))
    await transport.send(answer)
    assert await pipes.one_write() == [note(0), note(1), note(2), answer]
    # three tasks (three sessions) that each send in the same turn of the loop
    await asyncio.gather(*(transport.send(note(n)) for n in range(3, 6)))
    assert await pipes.one_write() == [note(3), note(4), note(5)]


async def test_a_lone_message_goes_out_without_waiting_for_more(
    wired: tuple[PacketPipes, LineTransport],
) -> None:
    pipes, transport = wired
    await transport.send(note(1))
    assert await pipes.one_write() == [note(1)]  # nothing else is ever sent: no wait for company
    await transport.send(note(2))
    assert await pipes.one_write() == [note(2)]


async def test_messages_sent_right_before_the_close_still_go_out() -> None:
    pipes = PacketPipes()
    transport = await open_fd_transport(pipes.in_read, pipes.out_write)
    try:
        await transport.send(note(1))
        await transport.send({"jsonrpc": "2.0", "id": 9, "result": {"stopReason": "end_turn"}})
        await transport.close()
        pipes.close_output()
        assert await pipes.one_write() == [
            note(1),
            {"jsonrpc": "2.0", "id": 9, "result": {"stopReason": "end_turn"}},
        ]
    finally:
        pipes.close()
