"""Noticing an rg that can never finish: blocked opening a FIFO it met while walking.

rg opens every ignore file it meets (`.gitignore`, `.ignore`, `.rgignore`,
`.git/info/exclude`), and opening a FIFO for reading waits for a writer that never comes;
rg has no option to skip non-regular ignore files. A sandboxed command can plant one, so a
listing, a search or a checkpoint would wait forever. `StallWatch` tells such an rg from a
slow one by what the kernel shows in `/proc/<pid>/task/*`: a thread waiting in
`wait_for_partner` (the FIFO open; a slow disk's wait is another) and no output for
`STALL_SECONDS`. Where the kernel hides where threads wait: every thread asleep (state S, not
D), no CPU used and no output. Without /proc nothing is ever called stalled (the caller's
other bounds still apply).
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from dataclasses import dataclass

STALL_SECONDS = 3.0
POLL_SECONDS = 0.5
_FIFO_WAIT = "wait_for_partner"
# The open calls' numbers, and which argument is the path: open(path) and openat(dirfd, path).
_OPEN_SYSCALLS = {"x86_64": {"2": 0, "257": 1}, "aarch64": {"56": 1}}.get(platform.machine(), {})
_NAME_BYTES = 4096


@dataclass(frozen=True, slots=True)
class _Sample:
    at_fifo: frozenset[str]  # threads waiting in `wait_for_partner`: opening a FIFO
    wchan_shown: bool  # the kernel names where threads wait
    asleep: bool  # every thread in state S
    cpu_ticks: int


def _sample(pid: int) -> _Sample | None:
    """rg's threads now, or None when /proc does not show them (gone, or no /proc)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    asleep, shown, ticks = True, False, 0
    at_fifo: set[str] = set()
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as stat:
                # The name in parentheses may hold spaces: the fields follow its last ")".
                fields = stat.read().rpartition(b")")[2].split()
            with open(f"/proc/{pid}/task/{tid}/wchan", "rb") as wchan:
                waits_in = wchan.read().decode(errors="replace").strip()
        except OSError:
            continue  # the thread just ended
        shown = shown or waits_in not in ("", "0")
        if waits_in == _FIFO_WAIT:
            at_fifo.add(tid)
        asleep = asleep and fields[0] == b"S"
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return _Sample(frozenset(at_fifo), shown, asleep, ticks)


@dataclass(slots=True)
class StallWatch:
    """Fed with how much rg has written so far, says when rg has been blocked for good: the
    same thread waiting to open a FIFO and no output for `seconds` (rg's idle workers spin,
    so CPU time says nothing then); where the kernel hides where threads wait, every thread
    asleep with no CPU used and no output."""

    pid: int
    seconds: float = STALL_SECONDS
    _since: float = 0.0
    _last: tuple[object, ...] | None = None  # what stayed the same since `_since`

    def stalled(self, produced: int) -> bool:
        sample = _sample(self.pid)
        now = time.monotonic()
        last = self._last
        if sample is None:
            key: tuple[object, ...] | None = None
        elif sample.wchan_shown:
            # The threads that have waited on a FIFO ever since `_since`.
            fifo = (
                sample.at_fifo & last[0]
                if last is not None and isinstance(last[0], frozenset)
                else sample.at_fifo
            )
            key = (fifo, produced) if fifo else None
        else:
            key = ("asleep", produced, sample.cpu_ticks) if sample.asleep else None
        if key is None or last is None or key[1:] != last[1:]:
            self._since, self._last = now, key
            return False
        self._last = key
        return now - self._since >= self.seconds


def blocked_path(pid: int) -> str | None:
    """The path rg is blocked opening, read from its memory (allowed: rg is our child),
    or None where the kernel or the architecture does not show it."""
    with contextlib.suppress(OSError, ValueError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/syscall") as syscall:
                parts = syscall.read().split()
            if not parts or parts[0] not in _OPEN_SYSCALLS:
                continue
            address = int(parts[1 + _OPEN_SYSCALLS[parts[0]]], 16)
            with open(f"/proc/{pid}/mem", "rb") as mem:
                mem.seek(address)
                name = mem.read(_NAME_BYTES).partition(b"\0")[0]
            if name:
                return os.fsdecode(name)
    return None


def stall_message(path: str | None) -> str:
    where = f" ({path.removeprefix('./')})" if path else ""
    return (
        f"ripgrep was stopped: it waited without end opening a FIFO{where} in the tree, likely an "
        "ignore file (.gitignore, .ignore, .rgignore, .git/info/exclude) made a named pipe. "
        "Remove or replace that file (ask the user if you did not make it), then try again."
    )


__all__ = ["POLL_SECONDS", "STALL_SECONDS", "StallWatch", "blocked_path", "stall_message"]
