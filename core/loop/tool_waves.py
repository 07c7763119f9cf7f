"""Which tool calls of one model response may run at the same time.

Reads and searches run together; edits join them when the files they touch differ
(compared by identity: `a.py`, `./a.py`, `/abs/a.py`, a symlink and a hard link to it are
one file); calls to the same file and interactive tools (commands) keep the model's order.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, TypeVar


class Interactive(Protocol):
    @property
    def interactive(self) -> bool: ...


class Scheduled(Protocol):
    """What scheduling needs of a call (`prepared_calls.PreparedCall`)."""

    @property
    def tool(self) -> Interactive | None: ...

    @property
    def writes(self) -> bool: ...

    @property
    def targets(self) -> frozenset[object] | None: ...


Call = TypeVar("Call", bound=Scheduled)


def waves(calls: list[Call]) -> list[list[Call]]:
    """Split one response's calls into groups that may run at the same time.

    Reads and searches run together; edits join when their paths differ; calls to
    the same path and interactive tools (commands) keep the model's order.
    """
    waves: list[list[Call]] = []
    current: list[Call] = []
    for item in calls:
        if current and _conflicts(item, current):
            waves.append(current)
            current = []
        current.append(item)
    if current:
        waves.append(current)
    return waves


def _conflicts(item: Scheduled, wave: list[Call]) -> bool:
    if item.tool is not None and item.tool.interactive:
        return True
    for other in wave:
        if other.tool is not None and other.tool.interactive:
            return True
        if not (item.writes or other.writes):
            continue
        if item.targets is None or other.targets is None:
            return True  # a path that did not resolve may name the same file
        if item.targets & other.targets:
            return True
        if item.writes and other.writes and not (item.targets and other.targets):
            return True  # an edit whose paths are unknown cannot be proven independent
    return False


def file_identity(resolved: Path) -> object:
    """What makes two paths one file: its device and inode when it exists (hard links
    too), else its resolved path (a file about to be created)."""
    try:
        status = os.stat(resolved)
    except (OSError, ValueError):
        return resolved
    return (status.st_dev, status.st_ino)
