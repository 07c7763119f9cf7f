"""What the sandbox reads out of a small file before every command (git's config files:
their hooks folder, their includes, their credentials), worked out again only when the
file changed: a `stat` instead of a read and a parse per command.

A file is the same while its device, inode, size, modification time and change time are.
The change time matters most: a command can set the mtime back (`touch -d`) after a
write, but any change, that one included, moves the ctime to now, and nothing but the clock
sets it. A result is kept only when the file was read well after its last change: the
kernel's clock ticks coarsely, so a write in the same tick as the read would leave every
stamp as it was (git's "racy" index entries, the same way). A file that cannot be stat'ed
is read every time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from hermes_core.sandbox.listing import SETTLED_NS

T = TypeVar("T")

_Stamp = tuple[int, int, int, int, int]
MAX_KEPT = 512  # files remembered per reader; more than any session's configs

_kept: dict[tuple[Callable[[str], object], str], tuple[_Stamp, object]] = {}


def _stamp(path: str) -> _Stamp | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def read_through(path: str, reader: Callable[[str], T]) -> T:
    """`reader(path)`, or what it returned last time for this very file unchanged since."""
    before = _stamp(path)
    key = (reader, path)
    if before is not None:
        kept = _kept.get(key)
        if kept is not None and kept[0] == before:
            return kept[1]  # type: ignore[return-value]
    read_at = time.time_ns()
    value = reader(path)
    after = _stamp(path)
    if before is not None and after == before and read_at - before[4] > SETTLED_NS:
        if len(_kept) >= MAX_KEPT:
            _kept.clear()
        _kept[key] = (before, value)
    else:
        _kept.pop(key, None)
    return value
