"""The stub's control groups, which a warm child joins: a cold process is in them.

A child is forked in the server's cgroups, those of the process that launched it. A spawn
the user confined to a cgroup of its own (`systemd-run --user -p MemoryMax=2G`, a pids
limit, a CPU quota) would otherwise run its whole session outside that limit. The child
moves itself into each of the stub's cgroups that differs from the server's (v1 and v2),
by writing to its `cgroup.procs`; the server refuses (the stub runs cold) a stub whose
cgroups it cannot name or may not write to.
"""

from __future__ import annotations

import os


def memberships(pid: str) -> dict[str, str]:
    """`/proc/PID/cgroup`: each hierarchy (its controllers, "" for v2) to the path in it."""
    out = {}
    with open(f"/proc/{pid}/cgroup", encoding="utf-8") as table:
        for line in table:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            out[controllers] = path
    return out


def moves_to(pid: int) -> tuple[str, ...] | None:
    """The `cgroup.procs` files a child must write its pid to, to be in `pid`'s cgroups
    (none when they are the server's); None when one cannot be found or written."""
    try:
        theirs, mine = memberships(str(pid)), memberships("self")
    except (OSError, ValueError):
        return None
    files = []
    for controllers, path in sorted(theirs.items()):
        if mine.get(controllers) == path:
            continue
        folder = _folder(controllers, path)
        if folder is None:
            return None
        procs = os.path.join(folder, "cgroup.procs")
        if not os.access(procs, os.W_OK):
            return None
        files.append(procs)
    return tuple(files)


def join(files: tuple[str, ...]) -> None:
    """Move this process into the cgroups whose `cgroup.procs` are `files` (in the child)."""
    for procs in files:
        with open(procs, "w", encoding="ascii") as handle:
            handle.write("0\n")  # 0: the writing process


def _folder(controllers: str, path: str) -> str | None:
    """Where the hierarchy of `controllers` is mounted, and `path` in it."""
    wanted = set(controllers.split(",")) if controllers else set()
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            separator = fields.index("-")
            root, mount_point = fields[3], fields[4]
            kind, options = fields[separator + 1], set(fields[separator + 3].split(","))
            hierarchy = (kind == "cgroup2" and not controllers) or (kind == "cgroup" and wanted <= options)
            inside = root.rstrip("/")
            if hierarchy and (wanted or kind == "cgroup2") and (path + "/").startswith(inside + "/"):
                return os.path.join(mount_point, path[len(inside) :].lstrip("/"))
    return None
