"""A forked child of the warm server becomes the process its stub would have been.

It takes the stub's stdio, cwd, environment (wholesale), argv, umask, resource limits,
nice value, I/O priority, oom_score_adj, CPUs and signal dispositions (peer.py), drops
what is the server's (its socket, lock, log, signal handlers), tells the stub its pid and
runs the very `run_stdio` a cold process runs. Its exit code goes to the stub before it
exits. If the stub dies
(even by SIGKILL) the socket ends: the child then shuts down as on SIGHUP (its terminal
gone), which cancels the turns and kills their commands.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import sys
import threading
from typing import Any, NoReturn

from hermes_acp.warm.peer import Context
from hermes_acp.warm.stub import GO, GONE, REPLY


def become(
    connection: socket.socket,
    fds: list[int],
    header: dict[str, Any],
    closing: tuple[int, ...],
    context: Context,
) -> NoReturn:
    code = 1
    try:
        _adopt(fds, header, closing, context)
        _handshake(connection)
        threading.Thread(target=_watch, args=(connection,), name="hermes-acp-stub", daemon=True).start()
        atexit.register(_tell, connection, 0)  # run_stdio's own exits (cli._exit_now) pass here
        from hermes_acp.cli import run_stdio

        code = run_stdio(None, None, None)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    _tell(connection, code)
    sys.stderr.flush()
    os._exit(code)


def _handshake(connection: socket.socket) -> None:
    """Our pid to the stub, then its go. A stub that gave up waiting runs cold: its input
    is not ours, so end without a word (stderr is its editor's)."""
    try:
        connection.settimeout(None)
        connection.sendall(REPLY.pack(b"P", os.getpid()))
        go = connection.recv(1)
    except OSError:
        go = b""
    if go != GO:
        os._exit(GONE)


def _adopt(fds: list[int], header: dict[str, Any], closing: tuple[int, ...], context: Context) -> None:
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    context.apply()  # before the stdio is the stub's: a failure says nothing to its editor
    for fd in closing:
        if fd >= 0:
            os.close(fd)
    stdin, stdout, stderr, cwd = fds
    for source, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(source, target)
    os.fchdir(cwd)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    os.environ.clear()
    os.environ.update(header["env"])
    sys.argv = [str(arg) for arg in header.get("argv") or ["hermes-acp"]]
    os.umask(int(header.get("umask", 0o022)) & 0o777)


def _watch(connection: socket.socket) -> None:
    """The stub sends nothing after its go: anything returned here is its end."""
    with contextlib.suppress(OSError):
        connection.recv(1)
    os.kill(os.getpid(), signal.SIGHUP)


def _tell(connection: socket.socket, code: int) -> None:
    with contextlib.suppress(OSError):
        connection.sendall(REPLY.pack(b"X", code))
