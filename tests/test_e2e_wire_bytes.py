"""The request bodies the server writes itself (core/providers/body.py) are, byte for byte,
the ones the provider SDKs wrote from the same request: through a session with tool calls,
text beyond ASCII and a compression, on each API, every body the model received is sent
again through the SDK's own `create()` and the two must be the same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.providers.sdk import untransformed
from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, RecordedRequest, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio

# Per API: the server's settings, and how its SDK's `create()` was handed a body (the
# shape `untransformed` gave it when the SDK still wrote the bodies).
APIS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "chat_completions": (
        {"HERMES_ACP_PROVIDER": "openai", "HERMES_ACP_MODEL": "gpt-4.1"},
        {"bulky": ("messages", "tools"), "placeholders": {"messages": []}},
    ),
    "responses": (
        {"HERMES_ACP_PROVIDER": "openai", "HERMES_ACP_MODEL": "gpt-5", "HERMES_ACP_API_MODE": "responses"},
        {"bulky": ("input", "tools", "instructions"), "placeholders": {}},
    ),
    "anthropic_messages": (
        {"HERMES_ACP_PROVIDER": "anthropic", "HERMES_ACP_MODEL": "claude-sonnet-4"},
        {"bulky": ("messages", "tools", "system"), "placeholders": {"messages": []}},
    ),
}


async def sent_by_the_sdk(api: str, fake: FakeProvider, request: RecordedRequest) -> bytes:
    """The bytes the SDK writes for the body `request` carried."""
    import anthropic
    import openai

    params = untransformed(json.loads(request.raw), **APIS[api][1])
    fake.script([Reply(text="ok")])
    if api == "anthropic_messages":
        base = fake.anthropic_base_url
        client: Any = anthropic.AsyncAnthropic(api_key="test", base_url=base, max_retries=0)
        create = client.messages.with_streaming_response.create
    else:
        client = openai.AsyncOpenAI(api_key="test", base_url=fake.openai_base_url, max_retries=0)
        endpoint = client.responses if api == "responses" else client.chat.completions
        create = endpoint.with_streaming_response.create
    try:
        async with create(**params) as response:
            await response.read()
    finally:
        await client.close()
    return fake.requests[-1].raw


@pytest.mark.parametrize("api", list(APIS))
async def test_every_body_is_the_bytes_the_sdk_wrote(api: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("café ✓ 🙂 naïve\n")
    with FakeProvider() as fake:
        env = server_env(tmp_path, None, HERMES_ACP_COMPRESSION_KEEP_LAST="2", **APIS[api][0])
        env.update(
            OPENAI_BASE_URL=fake.openai_base_url,
            OPENAI_API_KEY="test",
            ANTHROPIC_BASE_URL=fake.anthropic_base_url,
            ANTHROPIC_API_KEY="test",
        )
        async with connected(env) as (_, client):
            session = (await client.new_session(project))["sessionId"]
            await client.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
            fake.script(
                [
                    Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]),
                    Reply(text="It says café ✓ 🙂."),
                    Reply(text='Second answer, «quoted» "escaped" \\ and a tab\t.'),
                    Reply(text="Third answer."),
                    Reply(text="Summary: notes were read, three questions answered."),
                    Reply(text="After the summary."),
                ]
            )
            for prompt in ("read notes.txt", "and then? ✨", "one more", "/compact", "last one"):
                assert await client.prompt(session, prompt) == {"stopReason": "end_turn"}
        sent = [r for r in fake.requests if r.raw]
        assert len(sent) == 6
        last = json.loads(sent[-1].raw)
        history = json.dumps(last.get("messages") or last.get("input"), ensure_ascii=False)
        assert "Summary: notes were read" in history and "Second answer" not in history  # compressed
        assert "café ✓ 🙂 naïve" in json.dumps(json.loads(sent[1].raw), ensure_ascii=False)
        for request in sent:
            assert request.raw == await sent_by_the_sdk(api, fake, request)
