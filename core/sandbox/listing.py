"""Folder listings the sandbox reads before every command (dotenv files in and above the
roots, ssh-agent folders in /tmp), kept while the folder's ctime says no entry was added,
removed or renamed: a stat instead of a scan of a large /tmp or home folder.

The change time, not the modification time: a command can set a folder's mtime back
(`touch -d`) after planting an entry, but any change, that one included, moves the ctime
to now. A listing is reused only when it was taken well after the folder's last change:
the kernel's clock ticks coarsely, so an entry made in the same tick as the scan would not
move it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

SETTLED_NS = 1_000_000_000
_listings: dict[tuple[str, Callable[[str, bool], bool]], tuple[int, int, list[tuple[str, bool]]]] = {}


def entries(folder: str, keep: Callable[[str, bool], bool]) -> list[tuple[str, bool]]:
    """(name, is a directory, not following links) of the entries `keep` accepts."""
    try:
        mtime = os.stat(folder).st_ctime_ns
    except (OSError, ValueError):
        return []
    key = (folder, keep)
    cached = _listings.get(key)
    if cached is not None and cached[0] == mtime and cached[1] - mtime > SETTLED_NS:
        return cached[2]
    scanned_at = time.time_ns()
    try:
        with os.scandir(folder) as found:
            kept = [(e.name, d) for e in found if keep(e.name, d := e.is_dir(follow_symlinks=False))]
    except OSError:
        return []
    _listings[key] = (mtime, scanned_at, kept)
    return kept


def changed(folder: str) -> int | None:
    """The folder's change time (following links), or None when it is not there."""
    try:
        return os.stat(folder).st_ctime_ns
    except (OSError, ValueError):
        return None


def settled(stamps: tuple[int | None, ...], scanned_at: int) -> bool:
    """Whether a scan taken at `scanned_at` was well after every change in `stamps`."""
    return all(stamp is None or scanned_at - stamp > SETTLED_NS for stamp in stamps)
