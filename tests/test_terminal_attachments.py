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


def test_a_project_file_that_links_out_is_not_attached_but_a_path_spelled_outside_is(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    secret = tmp_path / "id_ed25519"
    secret.write_text("SSH-KEY-SECRET\n")
    (project / "notes.md").symlink_to(secret)  # planted by something that ran in the project
    with pytest.raises(AttachmentError, match="outside"):
        prompt_blocks("summarize @notes.md", project)
    # The user named the file outside themselves: theirs to send.
    blocks = prompt_blocks(f"summarize @{secret}", project)
    assert blocks[1]["resource"]["text"] == "SSH-KEY-SECRET\n"


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "pipe.txt")
    with pytest.raises(AttachmentError, match="FIFO"):
        prompt_blocks("read @pipe.txt", tmp_path)
