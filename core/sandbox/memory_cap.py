"""A memory cap for one session's sandboxed commands together (issue 19): a command that
allocates all it can is killed by the kernel inside its own memory cgroup, and neither the
agent nor the rest of the machine runs out.

A cgroup v1 `memory` hierarchy that the agent may write (root on a host, many
containers) gets one cgroup per session beside the `pids` one (`limits`), joined the same
way: by the session's launch thread once (a local command is forked inside), by a `sh`
before bwrap for an editor's terminal. `memory.limit_in_bytes` and, where swap is
accounted, `memory.memsw.limit_in_bytes` (memory and swap together) hold the cap. An
address-space rlimit would need no cgroup, but it breaks the JVM, Go and Node, whose
runtimes reserve far more address space than they use. Without a writable hierarchy
there is no cap (the README says so).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path

from hermes_core.sandbox import limits

MEMORY_V1 = Path("/sys/fs/cgroup/memory")


def cap_bytes(setting_mb: int) -> int:
    """The cap: `sandbox_memory_mb`, or half of the machine's memory for 0."""
    if setting_mb > 0:
        return setting_mb * 1024 * 1024
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2


def writable() -> bool:
    """Whether this process may make memory cgroups (a cap can apply)."""
    return limits.own_v1_cgroup(MEMORY_V1, "memory") is not None


class MemoryCgroup:
    """The memory cgroup of one session's commands, removed with it (when empty)."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = limit
        self._kills_seen = self.oom_kills()
        weakref.finalize(self, limits._remove, str(path))

    @classmethod
    def create(cls, name: str, limit: int) -> MemoryCgroup | None:
        base = limits.own_v1_cgroup(MEMORY_V1, "memory")
        if base is None:
            return None
        limits._sweep(base)
        path = base / name
        try:
            path.mkdir(exist_ok=True)
            (path / "memory.limit_in_bytes").write_text(f"{limit}\n")
            swap = path / "memory.memsw.limit_in_bytes"
            if swap.exists():  # memory and swap together: the cap cannot spill into swap
                swap.write_text(f"{limit}\n")
        except OSError:
            limits._remove(str(path))
            return None
        return cls(path, limit)

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for the cap so far."""
        try:
            lines = (self.path / "memory.oom_control").read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def killed_since_last_look(self) -> bool:
        kills = self.oom_kills()
        seen, self._kills_seen = self._kills_seen, kills
        return kills > seen

    def why(self) -> str:
        return (
            "The command was killed by the kernel: this session's sandboxed commands reached "
            f"their memory cap ({self.limit // (1024 * 1024)} MiB, `sandbox_memory_mb` in "
            "config.toml); use less memory (fewer parallel jobs), or ask the user to raise the cap"
        )


def join(tasks: Path, tid: int) -> bool:
    """Move one thread into a cgroup (v1 `tasks` takes a thread, `cgroup.procs` a process)."""
    with contextlib.suppress(OSError):
        tasks.write_text(f"{tid}\n")
        return True
    return False
