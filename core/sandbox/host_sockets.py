"""The host's daemons' unix sockets, which a sandboxed command must not reach.

Connecting to a socket needs no write access, so a read-only `/run` still hands a sandboxed
command every daemon listening there. Many run what they are asked outside the sandbox: a
container engine (`docker run -v /:/h`, containerd's shims), libvirt and LXD/Incus (a VM or
a privileged container with the host's root), a local PostgreSQL or MySQL reached as you by
peer authentication (a superuser's `COPY … FROM PROGRAM`), a CI runner's or a language
server's control socket. A list by name missed each one it did not name, so every socket
found under `/run` (three folders deep) is hidden, except those the C library's name
service and logging need, and those the user's `sandbox_sockets` setting lets through.
LXD's and Incus's sockets under `/var` are named besides.

The walk is kept while the change time of every folder it read stays put (an entry added,
removed or renamed moves it): a stat per folder before each command instead of a listing.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Collection
from pathlib import Path

from hermes_core.sandbox import listing

RUN = "/run"  # /var/run is a link to it nearly everywhere (its names are listed besides)
DEPTH = 3
MAX_ENTRIES = 20_000  # a /run that large is read no further: what was found is hidden
# What programs in the sandbox need to resolve names and log, reaching nothing that runs
# what it is told: glibc's name service cache, systemd's resolver and user database
# lookups, journald's log sockets (`/dev/log`), avahi's mDNS lookups.
NAME_SERVICE = frozenset(
    {
        "/run/nscd/socket",
        "/run/systemd/resolve/io.systemd.Resolve",
        "/run/systemd/userdb/io.systemd.Multiplexer",
        "/run/systemd/userdb/io.systemd.DynamicUser",
        "/run/systemd/userdb/io.systemd.NameServiceSwitch",
        "/run/systemd/journal/socket",
        "/run/systemd/journal/stdout",
        "/run/systemd/journal/dev-log",
        "/run/systemd/journal/syslog",
        "/run/avahi-daemon/socket",
    }
)
OUTSIDE_RUN = (
    "/var/snap/lxd/common/lxd/unix.socket",
    "/var/lib/lxd/unix.socket",
    "/var/lib/incus/unix.socket",
)

# The last walk: the folders read with their change times, when, and the sockets found.
_last: tuple[tuple[tuple[str, int | None], ...], int, tuple[str, ...]] | None = None


def host_sockets(allowed: Collection[str] = (), *, skip: Collection[str] = ()) -> list[Path]:
    """The sockets to hide: every one under /run but the name service's and `allowed`
    (as the user wrote them, or where they lead), plus LXD's and Incus's. `skip`: folders
    not walked (hidden whole already: the user's runtime dir)."""
    kept = set(NAME_SERVICE)
    for path in allowed:
        kept.add(os.path.abspath(os.path.expanduser(path)))
        kept.add(os.path.realpath(os.path.expanduser(path)))
    found = [*_walked(tuple(sorted(skip))), *(p for p in OUTSIDE_RUN if _is_socket(p))]
    return [Path(p) for p in found if p not in kept]


def _walked(skip: tuple[str, ...]) -> tuple[str, ...]:
    global _last
    if _last is not None:
        folders, scanned_at, found = _last
        stamps = tuple(listing.changed(folder) for folder, _ in folders)
        if stamps == tuple(stamp for _, stamp in folders) and listing.settled(stamps, scanned_at):
            return found
    scanned_at = time.time_ns()
    folders, sockets = _walk(skip)
    _last = (folders, scanned_at, sockets)
    return sockets


def _walk(skip: tuple[str, ...]) -> tuple[tuple[tuple[str, int | None], ...], tuple[str, ...]]:
    folders: list[tuple[str, int | None]] = []
    sockets: list[str] = []
    pending = [(RUN, 0)]
    seen = 0
    while pending and seen < MAX_ENTRIES:
        folder, depth = pending.pop()
        folders.append((folder, listing.changed(folder)))
        try:
            with os.scandir(folder) as listed:
                for entry in listed:
                    seen += 1
                    try:
                        mode = entry.stat(follow_symlinks=False).st_mode
                    except OSError:
                        continue
                    if stat.S_ISSOCK(mode):
                        sockets.append(entry.path)
                    elif stat.S_ISDIR(mode) and depth < DEPTH and entry.path not in skip:
                        pending.append((entry.path, depth + 1))
        except OSError:
            continue
    return tuple(folders), tuple(sorted(sockets))


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
