"""A streamed Markdown answer cut into whole blocks, so a terminal can render each as it
completes: a paragraph, list or heading ends at a blank line, a code fence at its closing
fence. What is still open waits for more text, or for `rest()` at the end of the answer."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class MarkdownBlocks:
    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        """The whole blocks that `text` completes ("" when none did)."""
        self._pending += text
        cut = _last_boundary(self._pending)
        if cut == 0:
            return ""
        done, self._pending = self._pending[:cut], self._pending[cut:]
        return done

    def rest(self) -> str:
        """What is left (the last block, maybe unfinished); the stream starts afresh."""
        rest, self._pending = self._pending, ""
        return rest


def _last_boundary(text: str) -> int:
    """The offset just after the last blank line outside a code fence; 0 when none."""
    boundary = 0
    fence: str | None = None  # the opening fence's marker while inside one
    offset = 0
    lines = text.split("\n")
    for index, line in enumerate(lines[:-1]):  # the last piece has no newline yet
        offset += len(line) + 1
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and opened and opened.group(1).startswith(fence[0] * len(fence)):
            fence = None
            boundary = offset  # a closed fence is a whole block
        elif fence is None and not line.strip() and index > 0:
            boundary = offset
    return boundary
