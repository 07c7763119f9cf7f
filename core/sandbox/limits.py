"""Limits on what one sandboxed command may take from the machine: a process count (so a
fork bomb fails inside the sandbox instead of filling the process table) and a size-capped
TMPDIR (a tmpfs with `--size`, so a disk fill there ends in ENOSPC).

The process count is enforced twice where the machine allows it: RLIMIT_NPROC set inside
the sandbox by `prlimit` (the kernel counts a user namespace's processes on their own, so
the user's other processes do not count; root ignores it), and a `pids` cgroup the command
is moved into before bwrap starts, when a writable cgroup v1 `pids` hierarchy exists
(root on hosts and in many containers).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import weakref
from pathlib import Path

PIDS_V1 = Path("/sys/fs/cgroup/pids")


@functools.cache
def prlimit() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


def limited(argv: list[str], max_processes: int) -> list[str]:
    """`argv`, run inside the sandbox, with its processes capped (threads count too). A
    `bash -c` command line gets bash's own `ulimit` first (no extra program to start: the
    cap costs nothing); anything else starts under `prlimit`. `ulimit` sets the soft and the
    hard limit, and raising a hard limit needs a capability the sandbox does not have."""
    if len(argv) >= 3 and Path(argv[0]).name in ("bash", "zsh") and argv[1] == "-c":
        return [argv[0], "-c", f"ulimit -u {int(max_processes)} || exit 126; {argv[2]}", *argv[3:]]
    tool = prlimit()
    if tool is None:
        return argv
    return [tool, f"--nproc={max_processes}:{max_processes}", "--", *argv]


class PidsCgroup:
    """A `pids` cgroup for one session's commands, removed with it (when empty)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        weakref.finalize(self, _remove, str(path))

    @classmethod
    def create(cls, name: str, max_processes: int) -> PidsCgroup | None:
        base = _own_pids_cgroup()
        if base is None:
            return None
        _sweep(base)
        path = base / name
        try:
            path.mkdir(exist_ok=True)
            (path / "pids.max").write_text(f"{max_processes}\n")
        except OSError:
            return None
        return cls(path)

    def launcher(self) -> list[str]:
        """The argv prefix, run before bwrap, that moves the command into the cgroup.
        The sandbox sees /sys read-only and cannot move itself out."""
        procs = str(self.path / "cgroup.procs")
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs]


def _own_pids_cgroup() -> Path | None:
    if not (PIDS_V1 / "cgroup.procs").exists():
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, relative = line.split(":", 2)
        if "pids" in controllers.split(","):
            path = PIDS_V1 / relative.lstrip("/")
            return path if os.access(path, os.W_OK) else None
    return None


def _sweep(base: Path) -> None:
    """Remove the empty cgroups of agents that are gone: the server ends with `os._exit`,
    so a finalizer does not always run."""
    try:
        names = [e.name for e in os.scandir(base) if e.is_dir() and e.name.startswith("hermes-acp-")]
    except OSError:
        return
    for name in names:
        owner = name.split("-")[2]
        if owner.isdigit() and not _alive(int(owner)):
            _remove(str(base / name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):  # still holds a process, or already gone
        os.rmdir(path)
