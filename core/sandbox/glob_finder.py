"""The paths below a root that a test accepts, kept current by the kernel (inotify) rather
than a walk per command: for `edit_globs`, what your wildcard `Edit(…)` rules match.

The root is walked once, with a watch on each folder a match could lie below (`viable`);
after that only what the kernel reports is looked at: a name created or moved in (a new
folder is watched, then listed, so nothing made meanwhile is missed). A matching folder is
not entered (it stands for what it holds), nor is `.git`, nor a link. Fails towards walking
again: when the kernel dropped events, the next look walks the root again; where watches
run out or inotify is missing, the listing says it is incomplete and the caller fails closed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import threading
import weakref
from collections.abc import Callable

from hermes_core.changes import inotify
from hermes_core.sandbox import repo_finder

MAX_WATCHES = 50_000  # for all finders of this process, and repo_finder's share of the system's at most
_IN_ISDIR = 0x4000_0000
_MASK = inotify.IN_CREATE | inotify.IN_MOVED_TO | inotify.IN_DONT_FOLLOW | inotify.IN_EXCL_UNLINK


class Finder:
    """One root's matches, kept current by the kernel's reports."""

    def __init__(self, root: str, matches: Callable[[str], bool], viable: Callable[[str], bool]) -> None:
        self.root = root
        self.matches = matches
        self.viable = viable
        self.lock = threading.Lock()
        self.paths: dict[int, str] = {}
        self.found: set[str] = set()
        self.partial = False
        self.stale = True
        self.fd = -1
        if inotify.available():
            self.fd = inotify._libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd >= 0:  # closed with the session's `Globs`
            weakref.finalize(self, _close, self.fd, self.paths)

    def current(self) -> tuple[list[tuple[str, bool]], bool]:
        """(the matching paths there now and whether each is a folder, not following a
        link; whether the listing is complete)."""
        with self.lock:
            if self.fd < 0:
                return [], False
            self._drain()
            if self.stale:
                self.stale, self.partial = False, False
                self.found.clear()
                self._walk(self.root)
            there = []
            for path in sorted(self.found):
                try:
                    there.append((path, stat.S_ISDIR(os.lstat(path).st_mode)))
                except OSError:
                    self.found.discard(path)
            return there, not self.partial

    def _walk(self, top: str) -> None:
        """Watch `top` and every folder below where a match could lie (`.git` and links not
        entered, a matching folder not entered: it is mounted whole); the watch comes
        before the listing, so nothing made meanwhile is missed."""
        pending = [top] if self.viable(top) else []
        while pending:
            folder = pending.pop()
            if not self._watch(folder):
                self.partial = True
                return
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if self.matches(entry.path):
                        self.found.add(entry.path)
                    elif _enterable(entry) and self.viable(entry.path):
                        pending.append(entry.path)

    def _watch(self, folder: str) -> bool:
        global _used
        # within the share repo_finder keeps for the repositories' watches too
        if _used + repo_finder._watches_used >= min(MAX_WATCHES, repo_finder._budget()):
            return False
        wd = inotify._libc().inotify_add_watch(self.fd, os.fsencode(folder), _MASK)
        if wd < 0:
            return ctypes.get_errno() != errno.ENOSPC  # gone or no folder: nothing below to miss
        if wd not in self.paths:
            with _used_lock:
                _used += 1
        self.paths[wd] = folder
        return True

    def _drain(self) -> None:
        for wd, mask, name in inotify.events(self.fd):
            if mask & inotify.IN_Q_OVERFLOW:
                self.stale = True
                continue
            folder = self.paths.get(wd)
            if folder is None:
                continue
            if mask & inotify.IN_IGNORED:
                _forget(self.paths, wd)
                continue
            path = f"{folder}/{name}"
            if self.matches(path):
                self.found.add(path)
            elif mask & _IN_ISDIR and name != ".git" and not self.stale:
                self._walk(path)


def _enterable(entry: os.DirEntry[str]) -> bool:
    return entry.name != ".git" and entry.is_dir(follow_symlinks=False)


_used = 0  # watches held by every finder of this process
_used_lock = threading.Lock()


def _forget(paths: dict[int, str], wd: int) -> None:
    global _used
    if paths.pop(wd, None) is not None:
        with _used_lock:
            _used -= 1


def _close(fd: int, paths: dict[int, str]) -> None:
    global _used
    with contextlib.suppress(OSError):
        os.close(fd)
    with _used_lock:
        _used -= len(paths)
    paths.clear()
