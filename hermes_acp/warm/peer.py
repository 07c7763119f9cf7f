"""Which stubs a warm server may serve, and what its child takes over from the stub.

A forked child runs in the server's process context, not the stub's: whatever confines a
process and is not in the environment (namespaces, no_new_privs, seccomp, capabilities,
the LSM label) would be the server's. A stub started in a jail (`unshare -rn` to keep an
agent offline, a container, a seccomp filter) served by a server outside it would leave
the jail, so the server serves only a peer of its uid whose confinement is its own, read
from the peer's /proc entry (the kernel's word, not the header's).

Resource limits, the nice value, the I/O priority, the OOM killer's adjustment, the CPUs
allowed, the ignored and blocked signals and the cgroups (cgroups.py) a child takes over:
it lowers them to the stub's, so `nice hermes-acp`, `ionice -c 3`, `choom -n 500`,
`ulimit -v`, `taskset`, `trap '' INT` or `systemd-run -p MemoryMax=` hold as in a cold
process.
A stub allowed more than the server (a higher hard limit, a lower nice value, a lower
`oom_score_adj` or a real-time I/O class the server may not set) cannot be matched: the
server says no and retires, and the stub's cold start launches a server of its own context.

The peer is the process that connected (SO_PEERCRED's pid). Where the kernel hands a pidfd
of it (SO_PEERPIDFD, Linux 6.5+), the server checks after reading its /proc entry that it
is still alive, so a peer that exited and whose pid went to another process is refused
rather than judged by that process's confinement. Older kernels keep that window.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import signal
import socket
import struct
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from hermes_acp.warm import cgroups, kernel

# What confines a process beside its namespaces, in /proc/PID/status.
STATUS_FIELDS = (
    "NoNewPrivs",
    "Seccomp",
    "Seccomp_filters",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
)
# What a child needs to lower its oom_score_adj, or to take a real-time I/O class.
CAP_SYS_ADMIN, CAP_SYS_NICE, CAP_SYS_RESOURCE = 21, 23, 24
LIMITS = tuple(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_"))


@dataclass(frozen=True)
class Context:
    """What a child takes over from its stub: its resource limits, priorities and CPUs."""

    limits: tuple[tuple[int, int, int], ...]  # (resource, soft, hard)
    nice: int
    ioprio: int  # class and level, as ioprio_get reports them
    oom_score_adj: int
    cpus: frozenset[int]
    ignored: frozenset[int]  # signals, as the stub's interpreter started (commands inherit them)
    blocked: frozenset[int]
    cgroups: tuple[str, ...]  # the `cgroup.procs` of the stub's cgroups that are not ours

    def apply(self) -> None:
        """Lower this process's limits and priority to the stub's (called in the child)."""
        for which, soft, hard in self.limits:
            resource.setrlimit(which, (soft, hard))
        if os.getpriority(os.PRIO_PROCESS, 0) != self.nice:
            os.setpriority(os.PRIO_PROCESS, 0, self.nice)
        # After the nice value: a process without an I/O class of its own reports one
        # derived from it, so a stub and a child of the same nice value compare equal.
        if kernel.ioprio_get(0) != self.ioprio:
            kernel.ioprio_set(self.ioprio)
        if oom_score_adj("self") != self.oom_score_adj:
            with open("/proc/self/oom_score_adj", "w", encoding="ascii") as adj:
                adj.write(str(self.oom_score_adj))
        if os.sched_getaffinity(0) != self.cpus:
            os.sched_setaffinity(0, self.cpus)
        self._signals()
        cgroups.join(self.cgroups)

    def _signals(self) -> None:
        """The stub's ignored and blocked signals. Both are Python processes examined before
        either changed a handler, so the stub's state is what a cold start would have
        begun with; SIGINT gets Python's own handler unless it was ignored."""
        for signum in signal.valid_signals():
            if signum in (signal.SIGKILL, signal.SIGSTOP):
                continue
            if signum == signal.SIGINT:
                default: Any = signal.default_int_handler
            else:
                default = signal.SIG_DFL
            want = signal.SIG_IGN if signum in self.ignored else default
            with contextlib.suppress(OSError, ValueError):
                if signal.getsignal(signum) in (signal.SIG_IGN, signal.SIG_DFL, signal.default_int_handler):
                    signal.signal(signum, want)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.blocked)


class Refused(Exception):
    """A peer this server may not serve; `retire`: one a server of its own context could."""

    def __init__(self, why: str, *, retire: bool = False) -> None:
        super().__init__(why)
        self.retire = retire


def examine(connection: socket.socket) -> Context:
    """The context a child must take over to serve this peer, or Refused."""
    creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    if uid != os.getuid() or pid <= 0:  # pid 0: a process in a pid namespace we cannot see
        raise Refused(f"another user or an unseen process (uid {uid}, pid {pid})")
    try:
        pidfd = kernel.peer_pidfd(connection)
    except OSError as exc:
        raise Refused(f"it has gone: {exc}") from exc
    try:
        context = _read(pid)
        if pidfd is not None and not kernel.pidfd_alive(pidfd):
            raise Refused(f"it exited while it was examined (pid {pid} may be another process now)")
    finally:
        if pidfd is not None:
            os.close(pidfd)
    if wider := _wider_than_mine(context):
        raise Refused(f"it may have more than this server: {wider}", retire=True)
    return context


def _read(pid: int) -> Context:
    """The peer's confinement checked against ours, and what a child must take over."""
    mine, theirs = _mine(), confinement(str(pid)) or {}
    if not theirs or mine != theirs:
        differ = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
        raise Refused(f"another confinement: {', '.join(differ) or 'unreadable'}")
    try:
        nice, cpus = os.getpriority(os.PRIO_PROCESS, pid), frozenset(os.sched_getaffinity(pid))
        ioprio, adj = kernel.ioprio_get(pid), oom_score_adj(str(pid))
        ignored, blocked = _signal_sets(pid)
        joins = cgroups.moves_to(pid)
        if joins is None:
            raise Refused("it is in a cgroup a child of this server may not join")
        return Context(tuple(_limits(pid)), nice, ioprio, adj, cpus, ignored, blocked, joins)
    except OSError as exc:
        raise Refused(f"its limits are unreadable: {exc}") from exc


def oom_score_adj(pid: str) -> int:
    with open(f"/proc/{pid}/oom_score_adj", encoding="ascii") as adj:
        return int(adj.read())


def confinement(pid: str) -> dict[str, str] | None:
    """The namespaces, privilege and filter state and LSM label of a process; None when
    unreadable (a peer that went away, or one we may not look at)."""
    root = f"/proc/{pid}"
    out: dict[str, str] = {}
    try:
        for name in sorted(os.listdir("/proc/self/ns")):
            out[f"ns/{name}"] = os.readlink(f"{root}/ns/{name}")
        out.update(_status(pid, STATUS_FIELDS))
    except OSError:
        return None
    with contextlib.suppress(OSError), open(f"{root}/attr/current", encoding="utf-8") as label:
        out["lsm"] = label.read().strip("\0\n ")  # AppArmor / SELinux; absent without an LSM
    return out


def _signal_sets(pid: int) -> tuple[frozenset[int], frozenset[int]]:
    """The signals a process ignores and blocks (/proc/PID/status: bit N-1 is signal N)."""
    masks = {field: int(value, 16) for field, value in _status(str(pid), ("SigIgn", "SigBlk")).items()}
    valid = signal.valid_signals()

    def members(mask: int) -> frozenset[int]:
        return frozenset(n for n in range(1, 65) if mask >> (n - 1) & 1 and n in valid)

    return members(masks.get("SigIgn", 0)), members(masks.get("SigBlk", 0))


def _status(pid: str, fields: Collection[str]) -> dict[str, str]:
    """`fields` of /proc/PID/status, as their text."""
    out: dict[str, str] = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
        for line in status:
            field, _, value = line.partition(":")
            if field in fields:
                out[field] = value.strip()
    return out


@functools.cache
def _mine() -> dict[str, str]:
    """The server's own confinement: it does not change while it serves."""
    return confinement("self") or {}


def _limits(pid: int) -> list[tuple[int, int, int]]:
    return [(which, *resource.prlimit(pid, which)) for which in LIMITS]


def _wider_than_mine(context: Context) -> str:
    """The first thing the peer may have that a child of this server could not get back."""
    for which, _, hard in context.limits:
        if _more(hard, resource.getrlimit(which)[1]):
            return f"hard limit {_name(which)}"
    if context.nice < os.getpriority(os.PRIO_PROCESS, 0):
        return "a higher priority"
    # Lowering oom_score_adj below what a privileged writer last set needs CAP_SYS_RESOURCE;
    # that floor is not readable, so the server's own value stands for it.
    if context.oom_score_adj < oom_score_adj("self") and not _capable(CAP_SYS_RESOURCE):
        return "a lower oom_score_adj"
    realtime = kernel.is_realtime(context.ioprio) and context.ioprio != kernel.ioprio_get(0)
    if realtime and not (_capable(CAP_SYS_ADMIN) or _capable(CAP_SYS_NICE)):
        return "a real-time I/O priority"
    return ""


def _capable(capability: int) -> bool:
    """Whether this process holds `capability` in its effective set."""
    return bool(int(_status("self", ("CapEff",)).get("CapEff", "0"), 16) >> capability & 1)


def _more(limit: int, than: int) -> bool:
    def size(value: int) -> float:
        return float("inf") if value == resource.RLIM_INFINITY else value

    return size(limit) > size(than)


def _name(which: int) -> str:
    return next(n for n in dir(resource) if n.startswith("RLIMIT_") and getattr(resource, n) == which)
