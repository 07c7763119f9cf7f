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
