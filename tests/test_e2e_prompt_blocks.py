"""Prompt blocks as a real client sends them: an audio clip becomes a note to the model,
and an @file mention reaches it on its own lines, apart from the words around it."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.asyncio(loop_scope="module")


def user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


async def test_an_audio_clip_becomes_a_note_instead_of_failing_the_prompt(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    clip = base64.b64encode(b"RIFF" + b"\0" * 1020).decode()
    fake.script([Reply(text="I cannot hear it.")])
    blocks = [
        {"type": "text", "text": "What does this say?"},
        {"type": "audio", "mimeType": "audio/wav", "data": clip},
    ]
    assert await client.prompt(session, blocks) == {"stopReason": "end_turn"}
    text = user_text(fake.requests[-1].body)
    assert "What does this say?" in text
    assert "An audio clip was attached (audio/wav, 1,024 bytes)" in text
    assert clip not in text


async def test_a_file_mention_is_set_apart_from_the_words_around_it(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "app.py").write_text("print('hi')\n")
    session = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="It prints hi.")])
    blocks = [
        {"type": "text", "text": "Explain"},
        {"type": "resource_link", "uri": (project / "app.py").as_uri(), "name": "app.py"},
        {"type": "text", "text": "briefly"},
    ]
    await client.prompt(session, blocks)
    text = user_text(fake.requests[-1].body)
    uri = (project / "app.py").as_uri()
    assert f"Explain\n<file uri=\"{uri}\">\nprint('hi')\n</file>\nbriefly" in text
