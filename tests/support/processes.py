"""Is a process still running, and waiting until it is not."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from tests.support.waiting import HANG, until


def unique_seconds(whole: int) -> str:
    """A `sleep` duration no other process on the machine has: its command line finds the
    process's host pid (`pids_running`) without taking another run's, or a failed run's
    leftover, for it."""
    return f"{whole}.{os.getpid()}{secrets.randbelow(10**6):06d}"


def alive(pid: int) -> bool:
    """Running (a zombie counts as dead: PID 1 here may never reap orphans)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, /proc was read
        return False
    return fields[0] != "Z"


async def wait_gone(pid: int, what: str = "process", seconds: float = HANG) -> None:
    """Until the process has ended; the cap only catches one that never does."""
    await until(lambda: not alive(pid), f"{what} {pid} to end", seconds)


def pids_running(*argv: str) -> list[int]:
    """Host pids of the running processes with exactly this command line. A sandboxed
    command cannot report its own: its `$$` is its pid inside the sandbox's namespace."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() == wanted and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
