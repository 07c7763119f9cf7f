"""Text the model wrote, as the user is shown it: every character that does not draw
itself, drawn as an escape.

A command, a path or a label the user decides on must read as what runs. Control
characters (`\\x1b[2K` erases a terminal line, `\\b` and `\\r` move back over it), bidi
overrides (U+202E shows the rest reversed), zero-width characters and other invisible
format characters would let the model show one command and run another. Each becomes
`\\x1b`, `\\u202e`…: visible, and a reader sees something was there.
"""

from __future__ import annotations

import re
import unicodedata

# Categories that draw nothing of their own: controls, format (bidi, zero-width), line and
# paragraph separators, private use, surrogates and unassigned code points.
_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
LINE_BREAK = " ⏎ "  # a newline in one-line text: the shell reads a new command there
_BLANKS = re.compile(r"[ \t]+")


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown(text: str, *, lines: bool = False) -> str:
    """`text` with every invisible character escaped; `lines`: newlines are kept (for a
    block), else each one shows as ⏎ (for a title)."""
    out: list[str] = []
    for char in text:
        if char == "\n":
            out.append("\n" if lines else LINE_BREAK)
        elif char == "\t":
            out.append(char)  # a blank the shell splits words on, like a space
        elif unicodedata.category(char) in _INVISIBLE:
            out.append(_escape(char))
        else:
            out.append(char)
    return "".join(out)


def shown_line(text: str, limit: int) -> tuple[str, int]:
    """One line for a title: escaped, runs of blanks made one space, cut to `limit`
    characters. Returns the line and how many characters the cut left out."""
    line = _BLANKS.sub(" ", shown(text)).strip()
    if len(line) <= limit:
        return line, 0
    return line[: limit - 1] + "…", len(line) - limit + 1


def code_span(text: str) -> str:
    """`text` as one markdown code span the text cannot close: escaped, on one line, fenced
    by more backticks than any run inside (a hook `a` <!-- `…` would otherwise end the code
    and hide the rest in an HTML comment)."""
    line = shown(text)
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    marks = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{marks}{pad}{line}{pad}{marks}"
