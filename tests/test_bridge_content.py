"""ACP prompt blocks -> user message parts, over a real temp workspace."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.bridge.content import NO_IMAGES, prompt_to_content
from hermes_acp.bridge.workspace import ClientWorkspace
from hermes_acp.session.slash.menu import AVAILABLE_COMMANDS, commands_update, parse_command
from hermes_core.messages import ImagePart, TextPart
from hermes_core.workspace import LocalWorkspace, WorkspaceScope
from tests.support.acp_harness import SLASH_COMMANDS
from tests.support.bridge_pair import open_pair
from tests.support.schema import validate

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def ws(root: Path) -> LocalWorkspace:
    return LocalWorkspace(WorkspaceScope(root), max_read_bytes=10_000)


def link(path: Path | str, fragment: str = "") -> dict[str, Any]:
    uri = Path(path).as_uri() if isinstance(path, Path) else path
    return {"type": "resource_link", "name": Path(str(path)).name, "uri": uri + fragment}


async def convert(blocks, ws, *, images=True, cap=200_000):
    return await prompt_to_content(blocks, ws, accepts_images=images, max_resource_bytes=cap)


async def test_text_blocks_pass_through(ws):
    assert await convert([{"type": "text", "text": "fix the bug"}], ws) == [TextPart("fix the bug")]


async def test_resource_link_is_read_and_wrapped(ws, root):
    (root / "app.py").write_text("def main():\n    pass\n")
    text, part = await convert([{"type": "text", "text": "see"}, link(root / "app.py")], ws)
    assert text == TextPart("see")
    # on its own line: providers join text parts as they are
    # marked as attached: the session's title is made from what the user typed only
    assert part == TextPart(
        f'\n<file uri="{(root / "app.py").as_uri()}">\ndef main():\n    pass\n</file>', attached=True
    )


async def test_resource_link_with_spaces_in_the_path(ws, root):
    (root / "my notes.md").write_text("hello")
    [part] = await convert([link(root / "my notes.md")], ws)
    assert "%20" in part.text and "\nhello\n</file>" in part.text


async def test_resource_link_is_capped_and_says_so(ws, root):
    (root / "long.txt").write_text("a" * 500)
    [part] = await convert([link(root / "long.txt")], ws, cap=100)
    assert "\n" + "a" * 100 + "\n[cut: only the first 100 of 500 bytes are shown" in part.text
    assert "a" * 101 not in part.text


async def test_resource_link_to_a_selection_reads_those_lines(ws, root):
    (root / "m.py").write_text("one\ntwo\nthree\nfour\n")
    [part] = await convert([link(root / "m.py", "#L2-3")], ws)
    assert part.text == f'<file uri="{(root / "m.py").as_uri()}#L2-3" lines="2-3">\ntwo\nthree\n</file>'


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda root: root / "missing.py", "does not exist"),
        (lambda root: root.parent / "secret.txt", "outside the workspace"),
        (lambda root: root / "logo.png", "binary"),  # named .png, but its bytes are no image
        (lambda root: root / "huge.log", "read limit"),
        (lambda root: root / "src", "Attached directory"),
    ],
)
async def test_unreadable_links_become_notes_not_failures(ws, root, make, expected):
    (root.parent / "secret.txt").write_text("s")
    (root / "logo.png").write_bytes(b"\x89PNG\0\0")
    (root / "huge.log").write_text("x" * 20_000)
    (root / "src").mkdir()
    [part] = await convert([link(make(root))], ws)
    assert isinstance(part, TextPart) and expected in part.text
    assert part.text.startswith("[")


async def test_non_file_links_name_the_uri(ws):
    [part] = await convert([link("https://example.com/spec.html")], ws)
    assert part.text == "[Attached link spec.html: https://example.com/spec.html (not a file, so not read)]"


async def test_embedded_text_resource_is_wrapped_and_capped(ws):
    block = {
        "type": "resource",
        "resource": {"uri": "file:///w/a.rs", "text": "fn main() {}", "mimeType": "text/x-rust"},
    }
    assert await convert([block], ws) == [
        TextPart('<file uri="file:///w/a.rs">\nfn main() {}\n</file>', attached=True)
    ]
    [cut] = await convert([block], ws, cap=4)
    assert cut.text.startswith('<file uri="file:///w/a.rs">\nfn m\n[cut: only the first 4 of 12 bytes')
    other = {"type": "resource", "resource": {"uri": "zed://rules/1", "text": 'say "hi"'}}
    assert (await convert([other], ws))[0].text == '<resource uri="zed://rules/1">\nsay "hi"\n</resource>'


async def test_embedded_blobs(ws):
    image = {
        "type": "resource",
        "resource": {"uri": "file:///w/shot.png", "blob": PNG, "mimeType": "image/png"},
    }
    pdf = {
        "type": "resource",
        "resource": {"uri": "file:///w/a.pdf", "blob": "JVBERi0xLjQK", "mimeType": "application/pdf"},
    }
    text = {
        "type": "resource",
        "resource": {
            "uri": "file:///w/n.txt",
            "blob": base64.b64encode(b"plain").decode(),
            "mimeType": "text/plain",
        },
    }
    assert await convert([image], ws) == [ImagePart("image/png", PNG)]
    [refused] = await convert([image], ws, images=False)
    assert (
        "image/png" in refused.text
        and "48 bytes" in refused.text
        and "does not accept images" in refused.text
    )
    [note] = await convert([pdf], ws)
    assert note.text == "[Attached file:///w/a.pdf: application/pdf data, 9 bytes, not readable as text]"
    assert (await convert([text], ws))[0].text == '<file uri="file:///w/n.txt">\nplain\n</file>'


async def test_image_blocks_depend_on_the_model(ws):
    block = {"type": "image", "data": PNG, "mimeType": "image/png"}
    assert await convert([block], ws) == [ImagePart("image/png", PNG)]
    assert await convert([block], ws, images=False) == [TextPart(NO_IMAGES, attached=True)]


async def test_unknown_or_broken_blocks_are_value_errors(ws):
    with pytest.raises(ValueError, match="'video'"):
        await convert([{"type": "video", "data": "AAAA"}], ws)
    with pytest.raises(ValueError, match="'text'"):
        await convert([{"type": "text"}], ws)
    with pytest.raises(ValueError, match="resource"):
        await convert([{"type": "resource", "resource": "nope"}], ws)


async def test_resource_link_reads_the_editors_unsaved_buffer(root):
    target = root / "draft.py"
    target.write_text("saved\n")

    async def editor(method: str, params: dict) -> Any:
        assert method == "fs/read_text_file" and params["path"] == str(target)
        return {"content": "unsaved\n"}

    pair = await open_pair(editor)
    try:
        scope = WorkspaceScope(root)
        ws = ClientWorkspace(
            scope, pair.agent, "s", read=True, write=False, terminal=False, local=LocalWorkspace(scope)
        )
        [part] = await convert([link(target)], ws)
        assert "\nunsaved\n</file>" in part.text
    finally:
        await pair.aclose()


# -- slash commands: also prompt text the bridge interprets ---------------------------


def test_available_commands_validate_and_hint_their_arguments():
    validate("SessionNotification", commands_update("s"))
    names = [c["name"] for c in AVAILABLE_COMMANDS]
    assert names == list(SLASH_COMMANDS)
    hints = {c["name"]: c["input"]["hint"] for c in AVAILABLE_COMMANDS if "input" in c}
    assert set(hints) == {"mode", "model", "steer", "rewind", "permissions"}
    assert all(mode in hints["mode"] for mode in ("ask", "accept_edits", "plan", "yolo"))


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("/help", ("help", "")),
        ("  /mode   plan \n", ("mode", "plan")),
        ("/model claude-sonnet-4-5", ("model", "claude-sonnet-4-5")),
        ("/compact keep the API notes", ("compact", "keep the API notes")),
        ("/etc/hosts is broken", None),
        ("/usr/bin is missing python", None),
        ("/unknown thing", ("unknown", "thing")),
        ("please /help", None),
        ("/helpme", ("helpme", "")),
        ("/ alone", None),
        ("/42 is the answer", None),
    ],
)
def test_parse_command(text, parsed):
    assert parse_command(text) == parsed
