"""A fast model's deltas that arrive in one network read reach the editor as one chunk per
kind and read, on every API, in their order and without a character lost: a long answer
costs a message per read, not per token."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import API_SETTINGS, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.asyncio

DELTAS = 400


@pytest.mark.parametrize("api", list(API_SETTINGS))
async def test_the_deltas_of_one_read_reach_the_editor_together(api: str, tmp_path: Path) -> None:
    answer = ("abcdé✓🙂 " * DELTAS)[:DELTAS]
    thinking = ("hmm, so " * DELTAS)[:DELTAS]
    with FakeProvider() as fake:
        env = server_env(tmp_path, fake, **API_SETTINGS[api])
        async with connected(env) as (_, client):
            session = (await client.new_session(tmp_path))["sessionId"]
            fake.script([Reply(text=answer, reasoning=thinking, chunk_size=1, one_write=True)])
            assert await client.prompt(session, "go") == {"stopReason": "end_turn"}
            updates = [
                u
                for u in client.session_updates(session)
                if u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk")
            ]
    assert client.text(session) == answer
    assert client.text(session, "agent_thought_chunk") == thinking
    kinds = [u["sessionUpdate"] for u in updates]
    # the thoughts came first and stay first; a read or a few, not a message per delta
    assert kinds == sorted(kinds, key=lambda kind: kind != "agent_thought_chunk")
    assert len(updates) <= 12, f"{len(updates)} chunks for {2 * DELTAS} deltas"


@pytest.mark.parametrize("api", list(API_SETTINGS))
async def test_deltas_in_http_chunks_of_their_own_that_arrive_together_are_merged(
    api: str, tmp_path: Path
) -> None:
    # One HTTP chunk per delta (as every provider sends them), all arriving at once: the
    # HTTP layer hands them over one by one, and each became a message of its own.
    answer = ("abcdé✓🙂 " * DELTAS)[:DELTAS]
    with FakeProvider() as fake:
        env = server_env(tmp_path, fake, **API_SETTINGS[api])
        async with connected(env) as (_, client):
            session = (await client.new_session(tmp_path))["sessionId"]
            fake.script([Reply(text=answer, chunk_size=1, chunks_in_one_write=True)])
            assert await client.prompt(session, "go") == {"stopReason": "end_turn"}
            chunks = client.session_updates(session, "agent_message_chunk")
    assert client.text(session) == answer
    assert len(chunks) < DELTAS // 4, f"{len(chunks)} chunks for {DELTAS} deltas"


@pytest.mark.parametrize("api", list(API_SETTINGS))
async def test_a_lone_delta_goes_out_without_waiting_for_the_next(api: str, tmp_path: Path) -> None:
    # The model sends its first delta, then nothing until the editor has shown it: were
    # the server holding deltas back to merge them, this would never finish.
    with FakeProvider() as fake:
        env = server_env(tmp_path, fake, **API_SETTINGS[api])
        async with connected(env) as (_, client):
            session = (await client.new_session(tmp_path))["sessionId"]
            fake.script([Reply(text="Hello there, editor.", chunk_size=6, hold_after_first_text=True)])
            prompt = client.start_prompt(session, "go")
            await client.wait_for(lambda: client.text(session) == "Hello ")
            fake.release_stream()
            assert await prompt == {"stopReason": "end_turn"}
    assert client.text(session) == "Hello there, editor."
