"""The workspace's files as a checkpoint sees them: listed by ripgrep (ignore rules
honoured, `.git` left out, no link followed), bounded in count and time, and the clock a
file's ctime is stamped by (checkpoints.py, rewinding.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

MAX_FILE_BYTES = 8 * 1024 * 1024  # larger files are listed but not kept (named when a rewind meets one)
LIST_TIMEOUT_SECONDS = 60.0
MAX_FILES = 200_000  # a larger tree is not snapshotted (the turn goes on, a warning is logged)
DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_CLOCK_REALTIME_COARSE = 5  # Linux's; Python names no constant for it


def list_files(root: Path, max_files: int = MAX_FILES) -> list[str]:
    """The workspace's files, relative, as ripgrep lists them: ignore rules honoured,
    hidden files kept, `.git` left out, symbolic links not followed (nor listed).

    Read as rg writes it and stopped at `max_files`: a tree of millions of files costs no
    more memory or time than the cap before it is refused (rg is killed there)."""
    import tempfile

    from hermes_core.fence.ripgrep import find_rg

    argv = [find_rg([root]), "--no-config", "--files", "--hidden", "--no-require-git", "-0", "-g", "!.git"]
    # rg's complaints go to a file: a pipe nobody reads while the names are read would
    # stop rg once full (unreadable folders by the thousand).
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(
            argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors
        ) as rg:
            files, over = _read_names(rg, max_files)
            if over:
                rg.kill()
                raise OSError(f"over the {max_files:,} files checkpoints take; not snapshotted")
            returncode = rg.wait()
        if returncode not in (0, 1):  # 1: no files
            errors.seek(0)
            message = errors.read(4096).decode(errors="replace").strip()
            raise OSError(f"listing the workspace failed: {message or f'rg exited {returncode}'}")
    return files


def _read_names(rg: subprocess.Popen[bytes], max_files: int) -> tuple[list[str], bool]:
    """rg's NUL-separated names as they come, and whether there were more than `max_files`.
    The whole listing is bounded by `LIST_TIMEOUT_SECONDS`, and an rg blocked for good on a
    FIFO it met (an ignore file) is stopped at once: rg is killed (its output then ends) and
    OSError says why."""
    import threading

    from hermes_core.fence.rg_stall import POLL_SECONDS, StallWatch, blocked_path, stall_message

    assert rg.stdout is not None
    out = rg.stdout.fileno()
    files: list[str] = []
    done = threading.Event()
    blocked: list[str] = []

    def watch() -> None:
        stall = StallWatch(rg.pid)
        deadline = time.monotonic() + LIST_TIMEOUT_SECONDS
        while not done.wait(POLL_SECONDS):
            if stall.stalled(len(files)):
                blocked.append(stall_message(blocked_path(rg.pid)))
            if blocked or time.monotonic() > deadline:
                rg.kill()
                return

    watcher = threading.Thread(target=watch, name="checkpoint-rg-watch", daemon=True)
    watcher.start()
    rest = b""
    try:
        while chunk := os.read(out, 1 << 16):
            *names, rest = (rest + chunk).split(b"\0")
            files += map(os.fsdecode, filter(None, names))
            if len(files) > max_files:
                return files, True
    finally:
        done.set()
        watcher.join()
    if blocked:
        raise OSError(f"listing the workspace failed: {blocked[0]}")
    if rest:
        files.append(os.fsdecode(rest))
    return files, len(files) > max_files


def status_clock_ns() -> int:
    """Now, by the clock the kernel stamps a file's ctime with (the coarse real-time clock,
    a few ms behind `time.time_ns()`): a file created or changed after this has a ctime at
    least this. Elsewhere, the fine clock less a margin for that lag."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            return time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
    return time.time_ns() - 50_000_000
