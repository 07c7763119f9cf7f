"""The output pipe writes the first message of a turn of the event loop at once and the
rest of that turn's messages together, in order, and loses none of them to a close.

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
        return self._messages(packet)

    def written_already(self) -> list[dict]:
        """The messages of the next write, which must be in the pipe now: no waiting."""
        os.set_blocking(self.out_read, False)
        try:
            return self._messages(os.read(self.out_read, 65536))
        finally:
            os.set_blocking(self.out_read, True)

    @staticmethod
    def _messages(packet: bytes) -> list[dict]:
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


ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}


async def test_the_first_message_of_a_loop_turn_is_written_at_once(
    wired: tuple[PacketPipes, LineTransport],
) -> None:
    pipes, transport = wired
    await transport.send(note(1))
    assert pipes.written_already() == [note(1)]  # a reply's first chunk waits for nothing


async def test_the_rest_of_a_loop_turn_goes_out_in_one_write(
    wired: tuple[PacketPipes, LineTransport],
) -> None:
    pipes, transport = wired
    for n in range(3):  # one task, no wait between: one turn of the loop
        await transport.send(note(n))
    await transport.send(ANSWER)
    assert pipes.written_already() == [note(0)]
    assert await pipes.one_write() == [note(1), note(2), ANSWER]
    # three tasks (three sessions) that each send in the same turn of the loop
    await asyncio.gather(*(transport.send(note(n)) for n in range(3, 6)))
    assert await pipes.one_write() == [note(3)]
    assert await pipes.one_write() == [note(4), note(5)]


async def test_messages_sent_right_before_the_close_still_go_out() -> None:
    pipes = PacketPipes()
    transport = await open_fd_transport(pipes.in_read, pipes.out_write)
    try:
        await transport.send(note(1))
        await transport.send(note(2))
        await transport.send(ANSWER)
        await transport.close()
        pipes.close_output()
        assert await pipes.one_write() == [note(1)]
        assert await pipes.one_write() == [note(2), ANSWER]
    finally:
        pipes.close()
