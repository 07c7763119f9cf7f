"""The stub: a spawned `hermes-acp --stdio` handing itself to a warm server.

Runs before anything else is imported (cli.main), so it costs a bare interpreter and the
few modules below. It connects to the server of its key (place.py), sends its stdio, its
cwd (as a descriptor) and a JSON header (argv, the whole environment, umask, pid), and
from then on only stands in for the child the server forks: it forwards the shutdown
signals to it and exits with its exit code. No server, or a server that says no (stale,
another key): None, and the caller runs cold.

Wire (stream socket): server -> `R` + `!i` 0 (ready: accepted, the peer checked); stub
-> `!I` length + header, with SCM_RIGHTS fds 0, 1, 2 and cwd; server -> `N` (no), or the
child's `P` + `!i` pid; stub -> `G` (go); child -> `X` + `!i` exit code. The descriptors
go only to a server that answered: sent into the queue of one that stopped accepting,
they would keep the editor's pipes open (no end of output) until it ran again. The child
touches the input only after the `G`: a stub that gave up waiting (a server stopped or
stuck) closes the socket instead and runs cold, and a child forked later sees the close
and ends without reading a byte.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import struct
import sys

from hermes_acp.warm.place import enabled, key, open_dir, socket_dir, through

TYPE_CHECKING = False  # not `typing`: the stub imports as little as it can
if TYPE_CHECKING:
    from collections.abc import Mapping

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
REPLY = struct.Struct("!ci")
READY = b"R"
GO = b"G"
GONE = 1  # the exit code when the child vanished without saying its own
WAIT_SECONDS = 2.0  # for the child's pid; a server answers in milliseconds when it runs at all


def hand_over(environ: Mapping[str, str]) -> int | None:
    """The served child's exit code, or None: no warm server took this process."""
    if not enabled(environ):
        return None
    dir_fd = open_dir(socket_dir(environ), create=False)
    if dir_fd is None:
        return None
    try:
        connection = _connect(dir_fd, key(environ) + ".sock", _wait_seconds(environ))
    finally:
        os.close(dir_fd)
    if connection is None:
        return None
    with connection:
        child = _send_self(connection, environ)
        if child is None:
            return None
        return _stand_in(connection, child)


def _connect(dir_fd: int, name: str, seconds: float) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Not blocking: a server that stopped accepting has a full queue, in which a blocking
    # connect would wait for as long as the server does (EAGAIN instead: cold).
    connection.settimeout(seconds)
    try:
        connection.connect(through(dir_fd, name))
    except OSError:  # no server (or a dead one's socket, or a full queue): cold
        connection.close()
        return None
    return connection


def _send_self(connection: socket.socket, environ: Mapping[str, str]) -> int | None:
    """Hand the stdio, cwd and header over; the child's pid, or None when refused."""
    mask = os.umask(0o022)
    os.umask(mask)
    header = json.dumps(
        {"op": "serve", "argv": sys.argv, "env": dict(environ), "umask": mask, "pid": os.getpid()}
    ).encode("utf-8", "surrogateescape")
    try:
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # a cwd we cannot open: the cold path meets it as it always has
        return None
    try:
        fds = array.array("i", [0, 1, 2, cwd])
        connection.settimeout(_wait_seconds(environ))
        ready = read_reply(connection)
        if ready is None or ready[0] != READY:
            return None
        connection.sendmsg(
            [struct.pack("!I", len(header)) + header], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
        )
        reply = read_reply(connection)
        if reply is None or reply[0] != b"P":
            return None
        connection.settimeout(None)
        connection.sendall(GO)
    except OSError:  # the timeout too: the socket closes unanswered, so no child will read
        return None
    finally:
        os.close(cwd)
    return reply[1]


def _wait_seconds(environ: Mapping[str, str]) -> float:
    try:
        return max(0.01, float(environ.get("HERMES_ACP_WARM_WAIT", WAIT_SECONDS)))
    except ValueError:
        return WAIT_SECONDS


def _stand_in(connection: socket.socket, child: int) -> int:
    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(child, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    try:
        reply = read_reply(connection)
    except OSError:
        return GONE
    return reply[1] if reply is not None and reply[0] == b"X" else GONE


def read_reply(connection: socket.socket) -> tuple[bytes, int] | None:
    """One whole reply of the server (its kind and value), or None if it closed first."""
    data = b""
    while len(data) < REPLY.size:
        chunk = connection.recv(REPLY.size - len(data))
        if not chunk:
            return None
        data += chunk
    kind, value = REPLY.unpack(data)
    return kind, value
