"""A cold process that calls a plain-http endpoint (a local model server) never reads the
system's trust store (core/providers/tls.py): aiohttp's import loaded it twice, ~50 ms of
CPU each, before the first model chunk.

SSL_CERT_FILE is a FIFO here: a process loading the trust store opens it, and that open
is what the test's writer waits for (an event, and it comes before the reader can go on:
the reader blocks until the writer closes).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.support.acp_harness import ZED_CAPABILITIES, AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_plain_http_endpoint_answers_without_the_trust_store_read(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    trust_store = tmp_path / "trust-store.pem"
    os.mkfifo(trust_store)
    opened, done = threading.Event(), threading.Event()

    def writer() -> None:
        while True:  # aiohttp's import read it twice
            fd = os.open(trust_store, os.O_WRONLY)  # returns once a reader has opened it
            if done.is_set():  # the test's own reader, below
                os.close(fd)
                return
            opened.set()
            os.close(fd)  # an empty trust store: the reader reads its end

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        env = server_env(tmp_path, fake, SSL_CERT_FILE=str(trust_store))
        assert env["OPENAI_BASE_URL"].startswith("http://")
        async with spawn_server(env) as server:
            client: AcpClient = server.sdk_client(dict(ZED_CAPABILITIES))
            await client.initialize()
            session = (await client.new_session(project))["sessionId"]
            fake.script([Reply(text="Hello.")])
            answer = await client.prompt(session, [{"type": "text", "text": "hi"}])
            assert answer == {"stopReason": "end_turn"}
            assert client.text(session) == "Hello."
            assert not opened.is_set(), "the trust store was read for a plain-http endpoint"
    finally:
        done.set()
        reader = os.open(trust_store, os.O_RDONLY | os.O_NONBLOCK)  # lets a waiting writer go
        thread.join()
        os.close(reader)
