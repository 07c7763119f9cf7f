"""Linux's inotify read directly, for the events a change is made of and no others.

watchfiles' notifier (Rust `notify`) subscribes every watch to IN_OPEN and IN_CLOSE_NOWRITE
as well, so each file any process merely reads in a watched directory (our own `read_file`,
`search`, the user's build) wakes it; with fifty sessions that was ~190 read system calls a
crowd turn (README "The crowd's loop, this round"). This reader asks only for what
`watchfiles.Change` reports: creation, modification, attribute change, removal and moves.
It also sleeps in `poll` until an event or a stop arrives, where watchfiles' loop wakes
every step to look.

The interface is the subset of watchfiles' `RustNotify` that `hermes_core.changes.watch_shared`
uses (`watch(debounce_ms, step_ms, timeout_ms, stop)`, `close()`), plus `add(dirs)`, so a
new directory costs one watch instead of a new instance re-adding all of them.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import math
import os
import select
import struct
import threading
import time
from collections.abc import Iterable, Iterator

log = logging.getLogger(__name__)

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x0100_0000
IN_DONT_FOLLOW = 0x0200_0000
IN_EXCL_UNLINK = 0x0400_0000

ADDED, MODIFIED, DELETED = 1, 2, 3  # watchfiles.Change's values

CHANGE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
# The workspace is the attacker's: a directory swapped for a symlink between the walk and the
# watch must not have us watching where it points.
WATCH_MASK = CHANGE_MASK | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK

_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
_READ_SIZE = 64 * 1024
_NONBLOCK_CLOEXEC = os.O_NONBLOCK | os.O_CLOEXEC  # IN_NONBLOCK and IN_CLOEXEC have these values


class StopEvent(threading.Event):
    """A `threading.Event` a poller can wait on: `set()` also makes `fileno()` readable."""

    def __init__(self) -> None:
        super().__init__()
        self._fd_lock = threading.Lock()
        self._fd: int | None = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) if _HAS_EVENTFD else None

    def fileno(self) -> int | None:
        return self._fd

    def set(self) -> None:
        super().set()
        with self._fd_lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.eventfd_write(self._fd, 1)

    def close(self) -> None:
        with self._fd_lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class InotifyNotifier:
    """One inotify instance watching `dirs` (each non-recursively)."""

    def __init__(self, dirs: Iterable[str]) -> None:
        fd = _libc().inotify_init1(_NONBLOCK_CLOEXEC)
        if fd < 0:
            raise _os_error("inotify_init1")
        self._fd = fd
        self._paths: dict[int, str] = {}
        try:
            self.add(dirs)
        except BaseException:
            self.close()
            raise

    def add(self, dirs: Iterable[str]) -> None:
        """Watch these directories too; one that vanished (or is no longer a directory) is
        skipped: its parent's watch reports its removal."""
        add_watch = _libc().inotify_add_watch
        for directory in dirs:
            wd = add_watch(self._fd, os.fsencode(directory), WATCH_MASK)
            if wd >= 0:
                self._paths[wd] = directory
                continue
            code = ctypes.get_errno()
            if code not in (errno.ENOENT, errno.ENOTDIR):
                raise _os_error("inotify_add_watch", code, directory)

    def watch(
        self, debounce_ms: int, step_ms: int, timeout_ms: int, stop: threading.Event | None
    ) -> set[tuple[int, str]] | str:
        """The changes of one batch as (watchfiles.Change value, path): it ends when
        `step_ms` pass with nothing new, or `debounce_ms` after its first change.
        "stop" once `stop` is set; "timeout" after `timeout_ms` (0: never) without a change."""
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        stop_fd = stop.fileno() if isinstance(stop, StopEvent) else None
        if stop_fd is not None:
            poller.register(stop_fd, select.POLLIN)
        polls_for_stop = stop is None or stop_fd is not None
        changes: set[tuple[int, str]] = set()
        began = time.monotonic()
        first = last_new = began
        while True:
            if stop is not None and stop.is_set():
                return "stop"
            now = time.monotonic()
            wait: float | None
            if changes:
                wait = min(step_ms - (now - last_new) * 1000, debounce_ms - (now - first) * 1000)
                if wait <= 0:
                    return changes
            elif timeout_ms > 0:
                wait = timeout_ms - (now - began) * 1000
                if wait <= 0:
                    return "timeout"
            else:
                wait = None if polls_for_stop else step_ms  # a plain Event is only looked at
            ready = poller.poll(None if wait is None else math.ceil(wait))
            if any(fd == self._fd for fd, _ in ready):
                before = len(changes)
                self._read(changes)
                if len(changes) > before:
                    last_new = time.monotonic()
                    if not before:
                        first = last_new

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def _read(self, changes: set[tuple[int, str]]) -> None:
        # One read per wake-up: a workspace that writes without pause must not keep us
        # from the debounce deadline or the stop (poll answers at once while more waits).
        try:
            data = os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return
        self._decode(data, changes)

    def _decode(self, data: bytes, changes: set[tuple[int, str]]) -> None:
        for wd, mask, name in decoded(data):
            if mask & IN_Q_OVERFLOW:
                log.debug("The kernel's inotify queue overflowed: some changes were not seen")
                continue
            directory = self._paths.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:
                del self._paths[wd]
                continue
            path = os.path.join(directory, name) if name else directory
            if mask & (IN_CREATE | IN_MOVED_TO):
                changes.add((ADDED, path))
            elif mask & (IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF):
                changes.add((DELETED, path))
            elif mask & CHANGE_MASK:
                changes.add((MODIFIED, path))


_HAS_EVENTFD = hasattr(os, "eventfd")
_LIBC: ctypes.CDLL | None = None


def events(fd: int) -> Iterator[tuple[int, int, str]]:
    """Every event waiting on the non-blocking inotify descriptor `fd`, read until none
    waits: (watch, mask, name; "" for the watched folder itself). An error reading it
    (other than none waiting) ends them with an overflow (`IN_Q_OVERFLOW`, watch -1): what
    the kernel had for us is lost, as when its queue overflows."""
    while True:
        try:
            data = os.read(fd, 64 * 1024)
        except BlockingIOError:
            return
        except OSError:
            yield -1, IN_Q_OVERFLOW, ""
            return
        yield from decoded(data)


def decoded(data: bytes) -> Iterator[tuple[int, int, str]]:
    """The events (watch, mask, name) in what one read of an inotify descriptor returned."""
    offset = 0
    while offset + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        name = os.fsdecode(data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0"))
        offset += _EVENT.size + length
        yield wd, mask, name


def available() -> bool:
    """Whether this system has inotify (Linux, with a libc that exports it)."""
    try:
        _libc()
    except (OSError, AttributeError):
        return False
    return _HAS_EVENTFD


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_init1.restype = ctypes.c_int
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_add_watch.restype = ctypes.c_int
        _LIBC = libc
    return _LIBC


def _os_error(call: str, code: int | None = None, path: str | None = None) -> OSError:
    code = ctypes.get_errno() if code is None else code
    message = os.strerror(code)
    if code == errno.EMFILE and call == "inotify_init1":
        message += " (fs.inotify.max_user_instances reached)"
    return OSError(code, f"{call}: {message}", path) if path else OSError(code, f"{call}: {message}")
