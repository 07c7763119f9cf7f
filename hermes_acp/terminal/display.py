"""Text for a terminal from ACP tool-call content: unified diffs, command output."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

_FENCE = re.compile(r"^```[^\n]*\n(.*?)\n?```\s*$", re.DOTALL)
MAX_OUTPUT_LINES = 40


def diff_text(path: str, old: str | None, new: str) -> str:
    before, after = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=before if old is not None else "/dev/null",
        tofile=after,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def content_text(item: dict[str, Any]) -> tuple[str, str] | None:
    """("diff" | "output", text) for one tool-call content item; None for what a
    terminal cannot show (an editor's terminal embed)."""
    if item.get("type") == "diff":
        return "diff", diff_text(str(item.get("path", "")), item.get("oldText"), str(item.get("newText", "")))
    if item.get("type") == "content":
        block = item.get("content") or {}
        if block.get("type") == "text":
            text = str(block.get("text", ""))
            fenced = _FENCE.match(text.strip())
            return "output", clip(fenced.group(1) if fenced else text)
    return None


def clip(text: str, limit: int = MAX_OUTPUT_LINES) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more lines"])


def proposed_change(raw_input: Any, cwd: Path) -> str | None:
    """The diff an edit would make, from its arguments (write_file / patch), for an
    approval card shown before the edit exists."""
    if not isinstance(raw_input, dict) or not isinstance(raw_input.get("path"), str):
        return None
    path = raw_input["path"]
    target = cwd / path
    try:
        current = target.read_text(encoding="utf-8") if target.is_file() else None
    except (OSError, UnicodeDecodeError):
        current = None
    if isinstance(raw_input.get("content"), str):
        return diff_text(path, current, raw_input["content"])
    old, new = raw_input.get("old_text"), raw_input.get("new_text")
    if isinstance(old, str) and isinstance(new, str):
        if current is not None and old in current:
            count = -1 if raw_input.get("replace_all") else 1
            return diff_text(path, current, current.replace(old, new, count))
        return diff_text(path, old, new)
    return None


def command_of(raw_input: Any) -> str | None:
    if isinstance(raw_input, dict) and isinstance(raw_input.get("command"), str):
        return raw_input["command"]
    return None
