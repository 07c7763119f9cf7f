"""`@path` in a typed prompt -> ACP content blocks, as editors send @-mentions."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.terminal.attachments import AttachmentError, prompt_blocks


def test_a_text_file_is_embedded_and_a_binary_one_linked(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    blocks = prompt_blocks("compare @notes.md with @logo.png.", tmp_path)
    assert blocks[0] == {"type": "text", "text": "compare @notes.md with @logo.png."}
    assert blocks[1]["type"] == "resource"
    assert blocks[1]["resource"]["text"] == "# notes\n"
    assert blocks[1]["resource"]["uri"] == (tmp_path / "notes.md").as_uri()
    assert blocks[2]["type"] == "resource_link"
    assert blocks[2]["uri"] == (tmp_path / "logo.png").as_uri()
    assert blocks[2]["mimeType"] == "image/png"


def test_a_name_is_not_a_file_but_a_missing_path_is_an_error(tmp_path: Path) -> None:
    assert prompt_blocks("ask @alice about it", tmp_path) == [{"type": "text", "text": "ask @alice about it"}]
    with pytest.raises(AttachmentError, match=r"src/missing\.py"):
        prompt_blocks("read @src/missing.py", tmp_path)


def test_the_same_file_twice_is_attached_once(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    assert len(prompt_blocks("@a.txt and @./a.txt", tmp_path)) == 2
