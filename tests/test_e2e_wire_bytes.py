"""The request bodies the server writes itself (core/providers/body.py) are, byte for byte,
the ones the provider SDKs wrote from the same request: through a session with tool calls,
text beyond ASCII and a compression, on each API, every body the model received is sent
again through the SDK's own `create()` and the two must be the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_harness import API_SETTINGS, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.sdk_bodies import SDK_SHAPES, bytes_the_sdk_writes, untransformed

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("api", list(API_SETTINGS))
async def test_every_body_is_the_bytes_the_sdk_wrote(api: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("café ✓ 🙂 naïve\n")
    with FakeProvider() as fake:
        env = server_env(tmp_path, fake, HERMES_ACP_COMPRESSION_KEEP_LAST="2", **API_SETTINGS[api])
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
            params = untransformed(json.loads(request.raw), **SDK_SHAPES[api])
            assert request.raw == await bytes_the_sdk_writes(api, fake, params)
