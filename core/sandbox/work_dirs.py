"""A work dir of its own for each local command's cache overlay, made between commands.

At every mount overlayfs empties its work dir's `work` and makes it anew: on ext4 an
rmdir (the old folder's inode evicted, its block freed) and a mkdir, journaled, for each
cache, on the command's path. A work dir no mount has used yet has no `work` to remove,
which saves about half of an overlay's mount (`bench_sandbox`). So each local launch takes
a spare work dir made after an earlier command (one is made on the spot when none is
left) and gives it back when the session's commands have ended; the give-back removes it
and makes the next spare in a thread of its own, off every command's path.

A work dir of its own also keeps two commands that run at once apart: with one shared
work dir, the second command's mount removed the `work` folder the first one's overlay
was using, and the first command's next write to that cache failed (EPERM).

They live next to the layer's upper (`works/PID-N`: overlayfs needs both on one file
system), under the agent's home, which the sandbox hides. A process killed mid-command
leaves its work dirs in use there: empty folders, as a rule.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hermes_core.sandbox.caches import Overlay

_SPARES_EACH = 4  # per cache at most: sessions of one process that launch at once


class WorkDirs:
    """The spare work dirs of this process, per cache layer."""

    def __init__(self) -> None:
        self._spares: dict[Path, list[Path]] = {}
        self._lock = threading.Lock()
        self._names = itertools.count(1)
        self._worker: ThreadPoolExecutor | None = None

    def take(self, layer: Overlay) -> tuple[Overlay, Path | None]:
        """`layer` with a work dir no mount has used, and that dir (to `give_back`); the
        layer as it was, and None, when none can be made (its shared work dir then)."""
        folder = _folder(layer)
        with self._lock:
            spares = self._spares.get(folder)
            work = spares.pop() if spares else None
        if work is None:
            try:
                work = self._make(folder)
            except OSError:
                return layer, None
        return dataclasses.replace(layer, work=work), work

    def give_back(self, used: list[Path]) -> None:
        """After the commands that used them have ended (nothing runs in their sandboxes):
        remove them and make as many spares, in the background."""
        if used:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="work-dirs")
            self._worker.submit(self._recycle, list(used))

    def _recycle(self, used: list[Path]) -> None:
        wanted: dict[Path, int] = {}
        for work in used:
            _remove(work)
            wanted[work.parent] = wanted.get(work.parent, 0) + 1
        for folder, count in wanted.items():
            with self._lock:
                missing = min(count, _SPARES_EACH) - len(self._spares.get(folder, []))
            for _ in range(missing):
                try:
                    spare = self._make(folder)
                except OSError:
                    break
                with self._lock:
                    self._spares.setdefault(folder, []).append(spare)

    def _make(self, folder: Path) -> Path:
        folder.mkdir(mode=0o700, exist_ok=True)
        work = folder / f"{os.getpid()}-{next(self._names)}"
        work.mkdir(mode=0o700)
        return work

    def forget_after_fork(self) -> None:
        """In a forked child (the warm start): the parent's spares and thread are the
        parent's, never to be taken or used here."""
        self._lock = threading.Lock()
        self._spares = {}
        self._worker = None

    def remove_spares(self) -> None:
        """At exit: the spares made for commands that will not come (the give-backs
        under way finished first)."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        with self._lock:
            spares = [work for works in self._spares.values() for work in works]
            self._spares.clear()
        for work in spares:
            _remove(work)


def _folder(layer: Overlay) -> Path:
    return layer.upper.parent / "works"


def _remove(work: Path) -> None:
    """A used work dir holds overlayfs's empty `work` (mode 000, ours); more only when a
    copy-up was cut short."""
    try:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(work / "work")
        os.rmdir(work)
    except OSError:
        shutil.rmtree(work, ignore_errors=True)  # never follows a link out


WORK_DIRS = WorkDirs()
atexit.register(WORK_DIRS.remove_spares)
os.register_at_fork(after_in_child=WORK_DIRS.forget_after_fork)
