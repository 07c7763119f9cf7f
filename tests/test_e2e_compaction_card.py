"""Compression end to end, over the real server: `/compact` shows as a card of its own,
"Compacted N messages", not as an italic line in the thought stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER_SETUP = ServerSetup(settings={"HERMES_ACP_COMPRESSION_KEEP_LAST": "2"})


async def test_compact_is_a_card(client: AcpClient, fake: FakeProvider, project: Path) -> None:
    sid = (await client.new_session(project))["sessionId"]
    for number in range(1, 5):
        fake.script([Reply(text=f"Answer {number}.")])
        await client.prompt(sid, f"question {number}")
    fake.script([Reply(text="The user asked four questions; each was answered.")])
    before = len(client.session_updates(sid))
    assert await client.prompt(sid, "/compact") == {"stopReason": "end_turn"}
    updates = client.session_updates(sid)[before:]
    cards = [u for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert cards[0]["sessionUpdate"] == "tool_call" and cards[0]["kind"] == "think"
    assert cards[-1]["status"] == "completed" and cards[-1]["title"] == "Compacted 4 messages"
    thoughts = [u for u in updates if u["sessionUpdate"] == "agent_thought_chunk"]
    assert not any("Compress" in u["content"]["text"] for u in thoughts)


async def test_an_automatic_compaction_is_a_card_too(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    """Over the threshold, a turn compacts before it asks the model: the same card, and the
    model's answer after it."""
    every_turn = {"HERMES_ACP_COMPRESSION_THRESHOLD": "0.000001", "HERMES_ACP_COMPRESSION_KEEP_LAST": "2"}
    async with connected(server_env(tmp_path / "home", fake, **every_turn)) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        for number in range(1, 5):
            fake.script([Reply(text="Summary: questions were answered."), Reply(text=f"Answer {number}.")])
            assert await client.prompt(sid, f"question {number}") == {"stopReason": "end_turn"}
        updates = client.session_updates(sid)
    cards = [
        u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    ]
    assert any(str(u.get("title", "")).startswith("Compacted ") for u in cards)
    thoughts = [u for u in updates if u["sessionUpdate"] == "agent_thought_chunk"]
    assert not any("Compress" in u["content"]["text"] for u in thoughts)
