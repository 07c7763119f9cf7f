"""Recovery levels seen from the editor: a refused key of a pool, a context limit the
endpoint states. The real server over pipes, the real SDK against the scripted provider."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply

FIRST_KEY = "sk-first-secret-key"
SECOND_KEY = "sk-second-secret-key"


async def test_a_rate_limited_key_rotates_and_the_editor_sees_its_index_only(
    tmp_path: Path, project: Path
) -> None:
    with FakeProvider() as fake:
        fake.script([Reply.rate_limited(30), Reply(text="hello from the second key")])
        env = server_env(tmp_path, fake, OPENAI_API_KEY=FIRST_KEY, OPENAI_API_KEY_1=SECOND_KEY)
        async with connected(env) as (process, client):
            session = (await client.new_session(project))["sessionId"]
            assert await client.prompt(session, "hi") == {"stopReason": "end_turn"}
            assert client.text(session) == "hello from the second key"
            thoughts = client.text(session, "agent_thought_chunk")
            assert "key #1 of 2 was refused (HTTP 429); trying key #2" in thoughts
            everything = json.dumps(process.received) + process.stderr
            assert FIRST_KEY not in everything and SECOND_KEY not in everything
            process.assert_clean()
        authorizations = [r.headers["authorization"] for r in fake.requests]
        assert authorizations == [f"Bearer {FIRST_KEY}", f"Bearer {SECOND_KEY}"]


async def test_a_stated_context_limit_reaches_the_editors_context_meter_and_the_next_run(
    tmp_path: Path, project: Path
) -> None:
    overflow = (
        "This model's maximum context length is 16384 tokens. However, your messages resulted "
        "in 17000 tokens. Please reduce the length of the messages."
    )
    with FakeProvider() as fake:
        fake.script(
            [Reply(status=400, error_kind="context_overflow", error_message=overflow), Reply(text="ok")]
        )
        env = server_env(tmp_path, fake, model="probe-model")
        async with connected(env) as (process, client):
            session = (await client.new_session(project))["sessionId"]
            assert await client.prompt(session, "hi") == {"stopReason": "end_turn"}
            assert client.text(session) == "ok"
            assert client.session_updates(session, "usage_update")[-1]["size"] == 16384
            process.assert_clean()
        fake.script([Reply(text="again")])
        async with connected(env) as (process, client):  # a later run starts from the confirmed window
            session = (await client.new_session(project))["sessionId"]
            assert await client.prompt(session, "hi") == {"stopReason": "end_turn"}
            assert client.session_updates(session, "usage_update")[-1]["size"] == 16384
            process.assert_clean()
