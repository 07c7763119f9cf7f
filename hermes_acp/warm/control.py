"""The warm servers seen from a terminal: `hermes-acp warm status` / `warm stop` and the
line in `hermes-acp --check`. A server's lock file holds its pid (serve.py); a server is
alive while it holds the lock. Stopping asks it to retire over its socket: it stops
listening at once (new spawns run cold) and exits once its children, the open threads,
have ended."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from hermes_acp.warm.place import enabled, open_dir, socket_dir, through
from hermes_acp.warm.stub import read_reply

ASK_SECONDS = 5.0  # a server answers in milliseconds; a stopped one is not waited for


@dataclass(frozen=True)
class Running:
    name: str  # its key
    pid: int | None


def alive(dir_fd: int, name: str) -> bool:
    """Whether a server holds the lock of `name` (a dead one's socket is removed)."""
    try:
        lock = os.open(f"{name}.lock", os.O_RDWR | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(lock)
    with contextlib.suppress(OSError):
        os.unlink(f"{name}.sock", dir_fd=dir_fd)
    return False


def running(dir_fd: int) -> list[Running]:
    """The servers listening in the folder open as `dir_fd`."""
    out = []
    for entry in sorted(os.listdir(dir_fd)):
        name = entry.removesuffix(".sock")
        if name != entry and alive(dir_fd, name):
            out.append(Running(name, _pid(dir_fd, name)))
    return out


def ask_to_retire(dir_fd: int, name: str) -> bool:
    """Ask server `name` to stop listening; True once it said it has."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(ASK_SECONDS)
            connection.connect(through(dir_fd, f"{name}.sock"))
            if read_reply(connection) is None:  # its ready
                return False
            header = json.dumps({"op": "retire"}).encode()
            connection.sendall(struct.pack("!I", len(header)) + header)
            return read_reply(connection) is not None
    except OSError:
        return False


def check_line(environ: Mapping[str, str]) -> tuple[bool | None, str, str]:
    """`hermes-acp --check`'s line: whether warm servers run, and how to stop them."""
    if not enabled(environ):
        return None, "warm start", "off (HERMES_ACP_WARM=0)"
    folder = socket_dir(environ)
    dir_fd = open_dir(folder, create=False)
    if dir_fd is None:
        if os.path.lexists(folder):
            return False, "warm start", f"{folder} is not a private folder of ours: every spawn runs cold"
        return None, "warm start", "on; no server running"
    try:
        found = running(dir_fd)
    finally:
        os.close(dir_fd)
    if not found:
        return None, "warm start", f"on; no server running ({folder})"
    pids = ", ".join(str(r.pid) for r in found)
    what = f"on; {len(found)} server(s) running in {folder} (pid {pids}); stop: `hermes-acp warm stop`"
    return True, "warm start", what


def run_warm(action: str, environ: Mapping[str, str], out: TextIO) -> int:
    """`hermes-acp warm status|stop`: 0 when all went as asked."""
    folder = socket_dir(environ)
    dir_fd = open_dir(folder, create=False)
    if dir_fd is None:
        out.write(f"no warm server: {folder} is not there (or not a private folder of ours)\n")
        return 0
    try:
        found = running(dir_fd)
        if action == "status":
            for server in found:
                out.write(f"running: pid {server.pid}, key {server.name}\n")
            out.write(f"{len(found)} warm server(s) in {folder}\n")
            return 0
        failed = [s for s in found if not ask_to_retire(dir_fd, s.name)]
        for server in found:
            state = "did not answer" if server in failed else "stopped listening (open threads go on)"
            out.write(f"pid {server.pid}: {state}\n")
        out.write(f"{len(found) - len(failed)} of {len(found)} warm server(s) stopped\n")
        return 1 if failed else 0
    finally:
        os.close(dir_fd)


def _pid(dir_fd: int, name: str) -> int | None:
    try:
        with open(f"{name}.lock", encoding="ascii", opener=lambda p, f: os.open(p, f, dir_fd=dir_fd)) as lock:
            return int(lock.read().strip() or 0) or None
    except (OSError, ValueError):
        return None
