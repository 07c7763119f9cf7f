"""A sandboxed command has ended only once nothing of its sandbox is left (issue 19).

bwrap exits as soon as the command it ran has; the sandbox's pid 1 (bwrap's reaper) is
killed just after, and the kernel then kills whatever else lives in the pid namespace (a
daemon the command left behind). Meanwhile that daemon can still change files, so the
alive lock (`alive_lock`) must stay held, and the command must not count as finished,
until pid 1 itself is gone: a process is notified as exited (its pidfd readable) only
after the kernel has killed and reaped the rest of its pid namespace.

A local launch learns pid 1's pid from bwrap (`--info-fd`) while the command is still held
back (`--block-fd`), opens a pidfd on it and checks that its parent is the bwrap we
started (a pid can be reused once its process is gone; bwrap's own pid cannot, before we
reap it). Only then is the command let go. An editor's terminal, which the editor starts
and watches, runs with `--as-pid-1` instead: the command line's shell is pid 1, and bwrap
(and so the `flock` holding the lock around it) exits only once that shell and
everything in its namespace are gone. The shell gets an EXIT trap so that it does not
`exec` the line's last program in its place: pid 1 ignores the signals it has no handler
for, and a shell that stays reaps what is orphaned.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

# Prepended to an editor terminal's command line (see above): a shell with a trap set
# runs its last command in a child instead of exec'ing it.
KEEP_SHELL = "trap : EXIT; "
AS_PID_1: tuple[str, ...] = ("--as-pid-1",)

# bwrap's pid 1 of each local launch still being watched (pid, pidfd), by its bwrap process.
_PID_ONES: dict[object, tuple[int, int]] = {}


class PidOne:
    """The two pipes that tell a local launch's pid 1 and hold its command until it is
    known. Made on the event loop, used on the launch thread right after the fork."""

    def __init__(self) -> None:
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()
        self._fds = [self._info_read, self._info_write, self._block_read, self._block_write]
        weakref.finalize(self, _close_all, self._fds)

    def options(self) -> list[str]:
        """bwrap's options for this launch."""
        return ["--info-fd", str(self._info_write), "--block-fd", str(self._block_read)]

    @property
    def child_fds(self) -> tuple[int, int]:
        """What bwrap must inherit (`pass_fds`)."""
        return self._info_write, self._block_read

    def attach(self, bwrap: subprocess.Popen[bytes]) -> None:
        """Right after bwrap started: watch its pid 1, then let the command run. When pid 1
        cannot be told apart, the command never runs (it is still held back): bwrap failed
        before it, or died and took pid 1 along."""
        for fd in (self._info_write, self._block_read):
            self._close(fd)
        info = self._read_info()
        pidfd = _pid_one(info, bwrap.pid)
        if pidfd is not None:
            _PID_ONES[bwrap] = (int(json.loads(info)["child-pid"]), pidfd)
            with contextlib.suppress(OSError):  # bwrap died meanwhile: its end is watched as any
                os.write(self._block_write, b"x")
        elif info:
            # A pid 1 was made but is not the one we can see: bwrap goes, and its death
            # signal reaches pid 1 before the end of the pipe it waits on does.
            with contextlib.suppress(ProcessLookupError):
                os.kill(bwrap.pid, signal.SIGKILL)
            os.waitid(os.P_PID, bwrap.pid, os.WEXITED | os.WNOWAIT)
        self.close()

    def close(self) -> None:
        for fd in list(self._fds):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.remove(fd)
            os.close(fd)

    def _read_info(self) -> bytes:
        chunks: list[bytes] = []
        while chunk := os.read(self._info_read, 4096):  # bwrap closes it once written
            chunks.append(chunk)
        return b"".join(chunks)


def keep_shell(argv: list[str]) -> list[str]:
    """`argv` with its `bash -c` line's shell kept as pid 1 (`KEEP_SHELL`)."""
    if len(argv) >= 3 and Path(argv[0]).name in ("bash", "zsh") and argv[1] == "-c":
        return [argv[0], "-c", KEEP_SHELL + argv[2], *argv[3:]]
    return argv


def _pid_one(info: bytes, bwrap_pid: int) -> int | None:
    try:
        pid = int(json.loads(info)["child-pid"])
        pidfd = os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError):
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            parent = next((line.split()[1] for line in status if line.startswith("PPid:")), "")
    except OSError:
        parent = ""
    if parent != str(bwrap_pid):
        os.close(pidfd)
        return None
    return pidfd


def when_gone(
    loop: asyncio.AbstractEventLoop, bwrap: subprocess.Popen[bytes], then: Callable[[], None]
) -> None:
    """Call `then` on the loop once bwrap's pid 1 is gone (at once when none is watched).
    Call after bwrap has exited."""
    watched = _PID_ONES.pop(bwrap, None)
    if watched is None:
        then()
        return
    pid, pidfd = watched
    if _alone(pid, pidfd):
        os.close(pidfd)
        then()
        return

    def readable() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        then()

    loop.add_reader(pidfd, readable)


def wait_gone(bwrap: subprocess.Popen[bytes]) -> None:
    """Block until bwrap's pid 1 is gone (off the event loop)."""
    watched = _PID_ONES.pop(bwrap, None)
    if watched is None:
        return
    _, pidfd = watched
    try:
        select.select([pidfd], [], [])
    finally:
        os.close(pidfd)


def _alone(pid: int, pidfd: int) -> bool:
    """Whether pid 1 is gone or alone in its namespace, once bwrap has exited. bwrap's exit
    sent it SIGKILL (`--die-with-parent`), so it forks no more; every other process there
    descends from it, and an orphan is handed to it, so no child means nothing else is
    left. Then the kernel's teardown of the sandbox's mounts (an overlay's unmount syncs
    its disk), which pid 1's exit waits for, is not the command's to wait for."""
    if select.select([pidfd], [], [], 0)[0]:
        return True
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as children:
            return not children.read().strip()
    except OSError:  # no such file in this kernel: wait for pid 1 itself
        return False


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()
