"""The streamed answer cut into whole Markdown blocks for the terminal."""

from __future__ import annotations

from hermes_acp.terminal.markdown_blocks import MarkdownBlocks


def fed(*pieces: str) -> list[str]:
    blocks = MarkdownBlocks()
    out = [done for piece in pieces if (done := blocks.feed(piece))]
    return [*out, blocks.rest()]


def test_a_block_is_rendered_once_its_blank_line_arrives() -> None:
    assert fed("Use **bo", "ld** here.\n", "\n1. one\n2. t", "wo\n") == [
        "Use **bold** here.\n\n",
        "1. one\n2. two\n",
    ]


def test_a_code_fence_with_blank_lines_stays_whole_until_it_closes() -> None:
    code = "```python\nx = 1\n\n\ny = 2\n```\n"
    assert fed("Look:\n\n", code[:14], code[14:], "after") == ["Look:\n\n", code, "after"]


def test_a_fence_never_closed_is_handed_over_at_the_end() -> None:
    assert fed("```\nopen\n\nstill open\n") == ["```\nopen\n\nstill open\n"]
