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

They live next to the layer's upper (overlayfs needs both on one file system), under the
agent's home, which the sandbox hides: `works/TOKEN/N`, TOKEN (`pPID-RANDOM`) this
process's own folder, never a pid another process could reuse. Beside it `works/TOKEN.lock`,
which the process holds an exclusive `flock` on for its whole life: a process killed
mid-command (kill -9) leaves its folder behind, and the next sandbox made in any agent
process removes the folders whose lock nobody holds (stale_work_dirs.py).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import fcntl
import itertools
import os
import secrets
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
        self._token = f"p{os.getpid()}-{secrets.token_hex(6)}"
        self._owning = threading.Lock()  # `_make` runs on the caller's thread and the worker's
        self._owned: dict[Path, int] = {}  # works folder -> the descriptor holding TOKEN.lock
        self._closing = False  # at exit: no more spares

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
        if used and self._closing:  # at exit, after `remove_spares`: a thread would not run
            for work in used:
                _remove(work)
            self._release_own()
        elif used:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="work-dirs")
            self._worker.submit(self._recycle, list(used))

    def _recycle(self, used: list[Path]) -> None:
        wanted: dict[Path, int] = {}
        for work in used:
            _remove(work)
            folder = work.parent.parent  # works/TOKEN/N
            wanted[folder] = wanted.get(folder, 0) + 1
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
        work = self._own(folder) / str(next(self._names))
        work.mkdir(mode=0o700)
        return work

    def _own(self, folder: Path) -> Path:
        """This process's folder under `folder`, made the first time with its lock held."""
        own = folder / self._token
        with self._owning:
            if folder not in self._owned:
                folder.mkdir(mode=0o700, exist_ok=True)
                self._owned[folder] = _hold(folder, self._token)
                own.mkdir(mode=0o700, exist_ok=True)  # after the lock: a folder without one is stale
        return own

    def forget_after_fork(self) -> None:
        """In a forked child (the warm start): the parent's spares and thread are the
        parent's, never to be taken or used here."""
        self._lock = threading.Lock()
        self._spares = {}
        self._worker = None
        self._owning = threading.Lock()
        for fd in self._owned.values():  # the parent's locks stay held by the parent
            with contextlib.suppress(OSError):
                os.close(fd)
        self._owned = {}
        self._closing = False
        self._token = f"p{os.getpid()}-{secrets.token_hex(6)}"

    def remove_spares(self) -> None:
        """At exit: the spares made for commands that will not come (the give-backs
        under way finished first)."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        with self._lock:
            spares = [work for works in self._spares.values() for work in works]
            self._spares.clear()
        self._closing = True
        for work in spares:
            _remove(work)
        self._release_own()

    def _release_own(self) -> None:
        """This process's folders and their locks, each once empty (a command still running
        keeps its own: the next process's sweep removes it)."""
        with self._owning:
            for folder, fd in list(self._owned.items()):
                try:
                    os.rmdir(folder / self._token)
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
                with contextlib.suppress(OSError):
                    os.unlink(folder / f"{self._token}.lock")
                with contextlib.suppress(OSError):
                    os.close(fd)
                del self._owned[folder]


def _hold(folder: Path, token: str) -> int:
    """`folder/TOKEN.lock`, locked before it bears its name (a sweep that opened it
    unlocked would take the process for dead); the descriptor stays open for life."""
    fresh = folder / f"{token}.lock.new"
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(fresh, folder / f"{token}.lock")
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(fresh)
        raise
    return fd


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
