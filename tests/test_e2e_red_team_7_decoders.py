"""Round seven of issue 19's hidden red team: our own code on workspace bytes. An image the
workspace holds (or the model makes) is decoded by C code; a flaw there must not run in the
agent process, which holds the model keys and runs unconfined. End to end through the real
server, a scripted model."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from tests.support.acp_harness import NO_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.test_e2e_images import png, sent_images

pytestmark = pytest.mark.asyncio(loop_scope="module")

# What Pillow's decoders are, as the process maps them: its C core and its codecs' libraries.
DECODERS = ("PIL/_imaging", "PIL/_webp", "libpng", "libjpeg", "libwebp", "libopenjp2", "libtiff")


def mapped_decoders(pid: int) -> set[str]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {name for name in DECODERS if name in maps}


def encoded(kind: str, size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 90)).save(buffer, format=kind)
    return buffer.getvalue()


async def test_no_image_decoder_runs_in_the_agent_process(fake: FakeProvider, tmp_path: Path) -> None:
    # read_file of every format, small (sent as it is) and large (downscaled), and an
    # `@image` mention: the agent read headers with Pillow and downscaled in-process, so a
    # decoder flaw (libwebp's CVE-2023-4863 was one) ran with the model keys in memory.
    project = tmp_path / "project"
    project.mkdir()
    pictures = {
        "small.png": png(16, 8),
        "small.jpg": encoded("JPEG", (12, 6)),
        "small.gif": encoded("GIF", (12, 6)),
        "small.webp": encoded("WEBP", (12, 6)),
        "wide.png": png(4000, 30),
        "wide.webp": encoded("WEBP", (3000, 20)),
    }
    for name, data in pictures.items():
        (project / name).write_bytes(data)
    calls = [ToolCallSpec("read_file", {"path": name}, id=f"c{i}") for i, name in enumerate(pictures)]
    fake.forget()
    fake.script([Reply(tool_calls=calls), Reply(text="Six pictures."), Reply(text="A line.")])
    async with connected(server_env(tmp_path / "home", fake), NO_CAPABILITIES) as (server, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "look at them") == {"stopReason": "end_turn"}
        sent = sent_images("chat_completions", fake.requests[-1].body)
        mention = {"type": "resource_link", "uri": (project / "wide.png").as_uri(), "name": "wide.png"}
        prompt = [{"type": "text", "text": "and this?"}, mention]
        await client.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        mentioned = sent_images("chat_completions", fake.requests[-1].body)[-1]
        assert mapped_decoders(server.pid) == set()

    assert sent[:4] == [pictures[n] for n in ("small.png", "small.jpg", "small.gif", "small.webp")]
    sizes = []
    for data in (*sent[4:], mentioned):
        with Image.open(io.BytesIO(data)) as image:
            sizes.append(image.size)
    assert sizes == [(2000, 15), (2000, 13), (2000, 15)]


async def test_an_image_is_not_decoded_where_the_sandbox_cannot_start(
    fake: FakeProvider, tmp_path: Path
) -> None:
    # Fail closed: without the sandbox a large image is refused, saying why; a small one,
    # which needs no decoding, is still sent.
    project = tmp_path / "project"
    project.mkdir()
    (project / "wide.png").write_bytes(png(4000, 30))
    (project / "small.png").write_bytes(png(16, 8))
    calls = [
        ToolCallSpec("read_file", {"path": "wide.png"}, id="c_wide"),
        ToolCallSpec("read_file", {"path": "small.png"}, id="c_small"),
    ]
    fake.forget()
    fake.script([Reply(tool_calls=calls), Reply(text="One picture.")])
    env = server_env(tmp_path / "home", fake, HERMES_ACP_SANDBOX_BWRAP=str(tmp_path / "no-bwrap"))
    async with connected(env, NO_CAPABILITIES) as (server, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "look") == {"stopReason": "end_turn"}
        assert client.tool_updates("c_wide")[-1]["status"] == "failed"
        assert mapped_decoders(server.pid) == set()
    body = fake.requests[-1].body
    assert sent_images("chat_completions", body) == [png(16, 8)]
    result = next(m for m in body["messages"] if m.get("tool_call_id") == "c_wide")["content"]
    assert "the sandbox cannot start" in result
