"""Images end to end, over the real server: `read_file` of an image gives the image to a model
that takes images, on all four APIs in each one's own form; a large one is downscaled; a
model without images gets a note; an `@image.png` mention attaches the image."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"


def png(width: int, height: int) -> bytes:
    """A real PNG (grey, 8 bits), made without any image library."""
    rows = b"".join(b"\x00" + bytes((x * 7 + y) % 256 for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def encoded(kind: str) -> bytes:
    """A small picture in one of the other three formats, as Pillow writes it."""
    picture = Image.new("RGB", (12, 6), (200, 40, 90))
    buffer = io.BytesIO()
    picture.save(buffer, format=kind)
    return buffer.getvalue()


def bomb(side: int) -> bytes:
    """A PNG of side x side black pixels: a few hundred kilobytes on disk, over a hundred
    million pixels once decoded. Written row by row so the test itself stays small."""
    packer = zlib.compressobj(9)
    row = b"\x00" * (side + 1)
    data = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def environment(api: str, home: Path, fake: FakeProvider) -> dict[str, str]:
    if api == "bedrock":
        return server_env(
            home,
            model=BEDROCK_MODEL,
            HERMES_ACP_PROVIDER="bedrock",
            HERMES_ACP_BASE_URL=f"http://127.0.0.1:{fake.port}",
            AWS_ACCESS_KEY_ID="x",
            AWS_SECRET_ACCESS_KEY="x",
            AWS_REGION="us-east-1",
            AWS_EC2_METADATA_DISABLED="true",
        )
    return server_env(home, fake, HERMES_ACP_API_MODE=api)


def sent_forms(api: str, body: dict[str, Any]) -> list[str]:
    """How each image names its type, in each API's own form: a data URL's MIME type, or
    Anthropic's `media_type`, or Bedrock's `format`."""
    if api == "chat_completions":
        urls = [
            p["image_url"]["url"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p["type"] == "image_url"
        ]
        return [url.split(";", 1)[0].removeprefix("data:") for url in urls]
    if api == "responses":
        urls = [
            p["image_url"]
            for i in body["input"]
            if isinstance(i.get("content"), list)
            for p in i["content"]
            if p["type"] == "input_image"
        ]
        return [url.split(";", 1)[0].removeprefix("data:") for url in urls]
    if api == "anthropic_messages":
        return [
            b["source"]["media_type"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "image"
        ]
    return [b["image"]["format"] for m in body["messages"] for b in m["content"] if "image" in b]


def sent_images(api: str, body: dict[str, Any]) -> list[bytes]:
    """The images a request body carries from the user's side, decoded, in each API's form."""
    found: list[bytes] = []
    if api == "chat_completions":
        for message in body["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                for part in message["content"]:
                    if part["type"] == "image_url":
                        found.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    elif api == "responses":
        for item in body["input"]:
            if item.get("role") == "user" and isinstance(item.get("content"), list):
                for part in item["content"]:
                    if part["type"] == "input_image":
                        found.append(base64.b64decode(part["image_url"].split(",", 1)[1]))
    elif api == "anthropic_messages":
        for message in body["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                for block in message["content"]:
                    if block["type"] == "image":
                        assert block["source"]["type"] == "base64"
                        found.append(base64.b64decode(block["source"]["data"]))
    else:
        for message in body["messages"]:
            if message["role"] == "user":
                for block in message["content"]:
                    if "image" in block:
                        found.append(base64.b64decode(block["image"]["source"]["bytes"]))
    return found


APIS = ["chat_completions", "responses", "anthropic_messages", "bedrock"]
# Each format as each API names it: a MIME type, except Bedrock's bare format word.
FORMS = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpeg"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
}


@pytest.mark.parametrize("api", APIS)
async def test_read_file_of_each_image_format_reaches_the_model(
    api: str, fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    pictures = {"PNG": png(16, 8), **{kind: encoded(kind) for kind in ("JPEG", "GIF", "WEBP")}}
    calls = []
    for kind, picture in pictures.items():
        name = f"shot.{kind.lower()}"
        (project / name).write_bytes(picture)
        calls.append(ToolCallSpec("read_file", {"path": name}, id=f"tooluse_{kind.lower()}"))
    fake.script([Reply(tool_calls=calls), Reply(text="Four pictures.")])
    async with connected(environment(api, tmp_path / "home", fake)) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "what is in the shots?") == {"stopReason": "end_turn"}
    body = fake.requests[-1].body
    assert sent_images(api, body) == list(pictures.values())
    form = 1 if api == "bedrock" else 0
    assert sent_forms(api, body) == [FORMS[kind][form] for kind in pictures]


async def test_a_decompression_bomb_is_refused(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    (project / "bomb.png").write_bytes(bomb(12_000))
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("read_file", {"path": "bomb.png"}, id="c_bomb")]), Reply(text="ok")]
    )
    async with connected(server_env(tmp_path / "home", fake)) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "look at bomb.png") == {"stopReason": "end_turn"}
        assert client.tool_updates("c_bomb")[-1]["status"] == "failed"
    body = fake.requests[-1].body
    assert sent_images("chat_completions", body) == []
    result = next(m for m in body["messages"] if m.get("tool_call_id") == "c_bomb")["content"]
    assert "144,000,000 pixels" in result and "refused" in result


async def test_a_large_image_is_downscaled_and_a_model_without_images_gets_a_note(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    from PIL import Image

    (project / "wide.png").write_bytes(png(4000, 30))
    (project / "small.png").write_bytes(png(4, 4))
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("read_file", {"path": "wide.png"}, id="c1")]), Reply(text="ok")]
    )
    async with connected(server_env(tmp_path / "home", fake)) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.prompt(sid, "look")
        [sent] = sent_images("chat_completions", fake.requests[-1].body)
        with Image.open(io.BytesIO(sent)) as image:
            assert max(image.size) == 2000

        await client.prompt(sid, "/model deepseek-chat")
        fake.script(
            [Reply(tool_calls=[ToolCallSpec("read_file", {"path": "small.png"}, id="c2")]), Reply(text="ok")]
        )
        await client.prompt(sid, "look again")
        body = fake.requests[-1].body
        assert sent_images("chat_completions", body) == [sent]  # the earlier one stays in the history
        result = next(m for m in body["messages"] if m.get("tool_call_id") == "c2")["content"]
        assert "does not accept images" in result


async def test_an_image_mention_attaches_the_image(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    picture = png(8, 8)
    (project / "logo.png").write_bytes(picture)
    fake.script([Reply(text="A logo.")])
    async with connected(server_env(tmp_path / "home", fake)) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        mention = {"type": "resource_link", "uri": (project / "logo.png").as_uri(), "name": "logo.png"}
        await client.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "what is this?"}, mention]},
        )
    assert sent_images("chat_completions", fake.requests[-1].body) == [picture]


async def test_an_image_over_the_size_cap_is_refused_unread(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    (project / "huge.png").write_bytes(png(8, 8) + b"\0" * (21 * 1024 * 1024))
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("read_file", {"path": "huge.png"}, id="c_huge")]), Reply(text="ok")]
    )
    async with connected(server_env(tmp_path / "home", fake)) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "look at huge.png") == {"stopReason": "end_turn"}
        assert client.tool_updates("c_huge")[-1]["status"] == "failed"
    body = fake.requests[-1].body
    assert sent_images("chat_completions", body) == []
    result = next(m for m in body["messages"] if m.get("tool_call_id") == "c_huge")["content"]
    assert "larger than the 20.0 MB read limit" in result
