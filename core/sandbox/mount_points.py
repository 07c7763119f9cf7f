"""The empty mount points bwrap leaves on the host for the placeholders (a `.git` where a
root has none, `.vscode`, a missing hooks folder), shared by every session of the process.

Two sessions (two threads of one editor) may work in one folder. While a command of either
runs, its mount point must stay: the kernel takes a mount away in every namespace when its
mount point is removed, so a session that removed one after its own commands (or at its
end) left the other's running command without its read-only `.git` or `.vscode`. And a
session must know the other's empty `.git` for a placeholder, not a repository: taken for
one, it was bound writable. So each session holds the mount points its launches use, and a
mount point is removed when the last holder lets it go.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path


class MountPoints:
    """Which sessions hold each placeholder's mount point (by their `id`)."""

    def __init__(self) -> None:
        self._holders: dict[Path, set[int]] = {}
        # The server holds and releases on its event loop's thread; a lock keeps a Sandbox
        # driven from threads (as a test does) right too, for a few ns.
        self._lock = threading.Lock()

    def hold(self, path: Path, holder: int) -> None:
        with self._lock:
            self._holders.setdefault(path, set()).add(holder)

    def held(self, path: Path) -> bool:
        """Whether `path` is one of the process's placeholders, held by some session now."""
        with self._lock:
            return path in self._holders

    def release(self, paths: Iterable[Path], holder: int) -> None:
        """`holder` no longer has these mounted; each that no other holder has is removed
        (if it is still an empty mount point: a `git init` the user approved filled it),
        deepest first."""
        for path in sorted(paths, reverse=True):
            with self._lock:
                holders = self._holders.get(path)
                if holders is None:
                    continue
                holders.discard(holder)
                if holders:
                    continue
                del self._holders[path]
                rmdir_quietly(str(path))  # under the lock: a launch meanwhile would hold it first


def rmdir_quietly(path: str) -> None:
    """Remove an empty mount point bwrap left (a folder, or an empty file)."""
    with contextlib.suppress(OSError):
        if os.path.isdir(path):
            os.rmdir(path)
        elif os.path.getsize(path) == 0:
            os.unlink(path)


MOUNT_POINTS = MountPoints()
