"""A cold process starts a warm server for the next spawn (serve.py), after its
`initialize` answer is out: a detached process of its own, never waited for here."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping

import hermes_acp
from hermes_acp.warm.place import enabled, hold_lock, key, open_dir, socket_dir

# The installation's folder goes last on the import path, not first: first, whatever else
# it holds (a site-packages) would shadow the standard library in the server and its
# children, and not in a cold process. (Another hermes_acp found before it has another
# key, and serves no one.)
SERVE = "import sys; sys.path.append({path!r}); from hermes_acp.warm.serve import main; main()"


def start_server(environ: Mapping[str, str]) -> None:
    """Spawn a server for `environ` unless one of its key is starting or serving."""
    if not enabled(environ):
        return
    dir_fd = open_dir(socket_dir(environ), create=True)
    if dir_fd is None:  # not ours, or open to others: never served from
        return
    try:
        lock = hold_lock(dir_fd, key(environ))
    finally:
        os.close(dir_fd)
    if lock is None:
        return  # held: a server is there (two cold spawns at once: the server's own lock decides)
    os.close(lock)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(hermes_acp.__file__)))
    null = os.devnull
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-P", "-c", SERVE.format(path=package_parent)],
            dict(environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
            ],
            setsid=True,
        )
    except OSError:
        return
    # Reaped when it exits (idle, stale), so that a long session leaves no zombie behind.
    threading.Thread(target=os.waitpid, args=(pid, 0), name="hermes-acp-warm-reaper", daemon=True).start()
