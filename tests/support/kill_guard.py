"""No test may signal every process on the machine.

`os.killpg(1, sig)` is `kill(-1, sig)`: as root, every process but init, the CI runner and
the developer's shell included. It is one careless line away: a sandboxed command's `$$` is
its pid in the sandbox's own namespace, usually 1, and a test that killed "the command's
group" by it ended a whole CI run. The guard refuses such a call in the test process with
an error that names the mistake; real pids and groups pass through untouched.
"""

from __future__ import annotations

import os
from collections.abc import Callable

_BROADCASTS = "signals a whole process group or every process"


class BroadcastKill(AssertionError):
    """A test tried to signal pid 0, -1 or group 0 or 1."""


def _guarded_kill(real: Callable[[int, int], None]) -> Callable[[int, int], None]:
    def kill(pid: int, sig: int) -> None:
        if pid in (0, -1):
            raise BroadcastKill(f"os.kill({pid}, {sig}) {_BROADCASTS}: use a host pid")
        real(pid, sig)

    return kill


def _guarded_killpg(real: Callable[[int, int], None]) -> Callable[[int, int], None]:
    def killpg(pgid: int, sig: int) -> None:
        if pgid <= 1:
            raise BroadcastKill(f"os.killpg({pgid}, {sig}) {_BROADCASTS}: a sandboxed `$$` is not a host pid")
        real(pgid, sig)

    return killpg


_installed = False


def install() -> None:
    """Wrap os.kill and os.killpg for the rest of this process (once)."""
    global _installed
    if not _installed:
        os.kill = _guarded_kill(os.kill)
        os.killpg = _guarded_killpg(os.killpg)
        _installed = True
