"""Where a warm server listens, and which processes it may serve: its key.

Imported by the stub before anything else, so it imports only the standard library's
cheapest modules. The key hashes everything a forked child would inherit from the server
rather than from the stub: the interpreter, our version and installation, the user, and
the environment (bar the names a shell changes on every command). The socket lives in a
directory the sandbox hides from the commands it runs ($XDG_RUNTIME_DIR, else the agent's
home), made 0700 and refused when anyone else owns it or may enter it: reaching the
socket means running an unconfined agent with an environment of one's choosing.
"""

from __future__ import annotations

import os
import stat
import sys

import hermes_acp

TYPE_CHECKING = False  # not `typing`: the stub imports as little as it can
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

VOLATILE_ENV = frozenset({"PWD", "OLDPWD", "_", "SHLVL"})
# The stub-server wire (stub.py), in the key: a server of an older wire that has not seen
# it is stale (an editable install, whose version did not move) is never waited for.
WIRE = 2
SERVERS_PER_USER = 4
DIR_NAME = "hermes-acp"  # under $XDG_RUNTIME_DIR
HOME_DIR_NAME = "warm"  # under the agent's home


def enabled(environ: Mapping[str, str]) -> bool:
    return environ.get("HERMES_ACP_WARM", "1").strip().lower() not in ("0", "false", "no", "off")


def key(environ: Mapping[str, str]) -> str:
    """The server's name: equal keys mean a child forked from it is the process the stub would be."""
    digest = _sha256()
    install = os.path.dirname(os.path.abspath(hermes_acp.__file__))
    for part in (
        WIRE,
        os.path.realpath(sys.executable),
        sys.version,
        _interpreter_options(),
        hermes_acp.__version__,
        install,
        os.getuid(),
    ):
        digest.update(f"{part}\0".encode("utf-8", "surrogateescape"))
    for name in sorted(environ):
        if name not in VOLATILE_ENV:
            digest.update(f"{name}={environ[name]}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def _interpreter_options() -> str:
    """The interpreter's options (`-O`, `-X dev`, `-I`, ...): a server launched without
    them cannot serve a spawn that has them. `safe_path` is left out: the server's own
    `-P`, which changes nothing but where it looks for its entry point."""
    names = [n for n in dir(sys.flags) if not n.startswith(("_", "n_")) and n != "safe_path"]
    flags = [(n, v) for n in names if not callable(v := getattr(sys.flags, n))]
    return repr((flags, sorted(sys._xoptions.items())))


def _sha256() -> Any:
    """SHA-256 without hashlib, whose OpenSSL binding is most of the stub's imports."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    return sha256()


def socket_dir(environ: Mapping[str, str]) -> str:
    """The directory the servers' sockets and locks live in (not checked: see `open_dir`)."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, DIR_NAME)
    home = environ.get("HERMES_ACP_HOME") or "~/.hermes-acp"
    return os.path.join(os.path.expanduser(home), HOME_DIR_NAME)


def open_dir(path: str, *, create: bool) -> int | None:
    """A descriptor of `path` when it is a directory of ours that no one else may enter
    (made so when `create`); None otherwise. Sockets are bound and reached through it
    (`/proc/self/fd/N/name`), which also lifts the 108-byte limit of a socket's path."""
    if create:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        os.close(fd)
        return None
    return fd


def hold_lock(dir_fd: int, name: str) -> int | None:
    """A descriptor holding the lock of key `name` in the folder (one server per key lives
    while it holds it); None when another process holds it, or it cannot be made."""
    import fcntl  # not at the top: the stub never locks

    try:
        lock = os.open(f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None
    return lock


def through(dir_fd: int, name: str) -> str:
    """`name` in the directory open as `dir_fd`, as a path short enough for a socket."""
    return f"/proc/self/fd/{dir_fd}/{name}"
