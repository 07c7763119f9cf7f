"""Removing the cache overlays' work dirs of agent processes that are gone (work_dirs.py).

An agent killed mid-command (kill -9, an OOM kill, a crash) never gives its work dirs back:
each `works/TOKEN/` folder under a cache layer stayed forever. A process holds an exclusive
`flock` on `works/TOKEN.lock` for its whole life, so a lock anyone can take again names a
folder nobody uses: the kernel dropped it when its owner died, whatever namespace that
owner ran in and whichever process now has its pid. Folders of the earlier naming
(`works/PID-N`, no lock) go only when no process has that pid.

Nothing here follows a link: each level is looked at with `lstat`, a link found in a
`works` folder is removed as a link, and the removal of a folder (shutil.rmtree) never
leaves it. The caches live in the agent's home, which the sandbox hides.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import threading
from pathlib import Path

from hermes_core.sandbox.limits import pid_alive

_LEGACY = re.compile(r"(\d+)-\d+")  # `PID-N`, before the lock files
_TOKEN = re.compile(r"p\d+-[0-9a-f]+")
_LOCK = ".lock"
_NEW_LOCK = ".lock.new"  # a lock not yet renamed into place (work_dirs._hold)


_swept: set[Path] = set()  # once a process: what dies later is the next process's to find
_sweeping = threading.Lock()


def sweep_once(state: Path) -> None:
    """`sweep(state)`, the first time this process makes a sandbox over `state`."""
    with _sweeping:
        if state in _swept:
            return
        _swept.add(state)
        sweep(state)


def sweep(state: Path) -> None:
    """Remove the stale work dirs under every cache layer of `state`."""
    for layer in _folders(state):
        works = layer / "works"
        if _is_dir(works):
            sweep_works(works)


def sweep_works(works: Path) -> None:
    """Remove the stale entries of one layer's `works` folder."""
    try:
        names = os.listdir(works)
    except OSError:
        return
    present = set(names)
    for name in names:
        path = works / name
        if name.endswith((_LOCK, _NEW_LOCK)):
            owner = name.removesuffix(_NEW_LOCK).removesuffix(_LOCK)
            if owner not in present:  # its folder is gone already (or not made yet)
                _remove_lock_if_free(path)
        elif _TOKEN.fullmatch(name):
            lock = works / f"{name}{_LOCK}"
            if f"{name}{_LOCK}" not in present:
                _remove(path)  # made only once its lock was in place: an owner died mid-sweep
            else:
                fd = _free_lock(lock)
                if fd is not None:
                    try:
                        _remove(path)
                        with contextlib.suppress(OSError):
                            os.unlink(lock)
                    finally:
                        os.close(fd)
        elif (legacy := _LEGACY.fullmatch(name)) is not None and not pid_alive(int(legacy[1])):
            _remove(path)


def _folders(state: Path) -> list[Path]:
    try:
        return [state / name for name in os.listdir(state) if _is_dir(state / name)]
    except OSError:
        return []


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _free_lock(path: Path) -> int | None:
    """A descriptor holding `path`'s lock when nobody else does; None when its owner
    lives (or it is not a plain file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
    except OSError:  # BlockingIOError: held, its owner is alive
        pass
    os.close(fd)
    return None


def _remove_lock_if_free(path: Path) -> None:
    fd = _free_lock(path)
    if fd is not None:
        try:
            with contextlib.suppress(OSError):
                os.unlink(path)
        finally:
            os.close(fd)


def _remove(path: Path) -> None:
    """A work dir's folder (its overlayfs `work` is mode 000: emptied before the walk), or
    a link in its place (the link only)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if not stat.S_ISDIR(mode):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    with contextlib.suppress(OSError):
        works = [path / "work"] + [path / name / "work" for name in os.listdir(path)]  # PID-N: its own
        for work in works:
            if _is_dir(work):
                with contextlib.suppress(OSError):
                    os.rmdir(work)
    shutil.rmtree(path, ignore_errors=True)


def _after_fork() -> None:
    global _sweeping
    _sweeping = threading.Lock()  # another thread may have held it at the fork
    _swept.clear()  # a warm server's child looks again


os.register_at_fork(after_in_child=_after_fork)
