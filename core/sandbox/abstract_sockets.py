"""The host's abstract unix sockets, out of reach of sandboxed commands.

An abstract socket (`@/tmp/.X11-unix/X0`, a session bus on `unix:abstract=…`, a dev
server's) has no file to hide: it lives in the network namespace, which a sandbox with the
network on shares with the host. Through X11 a command types into your terminal (many
desktops let your uid in without the hidden `~/.Xauthority`: `xhost +si:localuser:…`), and
through the session bus `systemd-run --user` starts anything: outside the sandbox.

Landlock (ABI 6, Linux 6.12+) scopes them: a process in a domain can connect only to
abstract sockets made inside that domain. The session's launch thread enters such a domain
once (no file or network rule: nothing else changes), so every sandboxed command it forks,
and whatever those start, is scoped. The domain needs `no_new_privs` on that thread, which
bwrap sets for itself anyway; a setuid bwrap would lose its privileges, so none is scoped.
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
from collections.abc import Callable

# Syscall numbers of the generic table (the same on x86_64 and arm64).
_CREATE_RULESET = 444
_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1
_PR_SET_NO_NEW_PRIVS = 38
_FIRST_ABI_WITH_SCOPES = 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def scope_this_thread(bwrap: str | None) -> bool:
    """Put the calling thread (and what it forks from now on) in a Landlock domain whose
    only restriction is abstract unix sockets. False where the kernel cannot (before 6.12,
    not Linux) or `bwrap` is setuid."""
    made = _ruleset(bwrap) if bwrap is not None else None
    if made is None:
        return False
    libc, fd = made
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(fd), ctypes.c_uint32(0)) == 0)


@functools.cache
def _ruleset(bwrap: str) -> tuple[ctypes.CDLL, int] | None:
    """libc and one ruleset descriptor for this process, made once; None where the kernel
    cannot scope or `bwrap` is setuid."""
    if os.uname().sysname != "Linux":
        return None
    try:
        if os.stat(bwrap).st_mode & stat.S_ISUID:
            return None
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(
        ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    if abi < _FIRST_ABI_WITH_SCOPES:
        return None
    attr = _RulesetAttr(0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET)
    fd = libc.syscall(
        ctypes.c_long(_CREATE_RULESET),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        ctypes.c_uint32(0),
    )
    return (libc, int(fd)) if fd >= 0 else None


def in_child(bwrap: str | None) -> Callable[[], None] | None:
    """A `preexec_fn` that scopes the child before it execs bwrap, for a sandboxed process
    started from the event loop rather than the launch thread (a hook). Everything it needs
    is made here, in the parent: the child only makes two system calls."""
    made = _ruleset(bwrap) if bwrap is not None else None
    if made is None:
        return None
    libc, fd = made

    def scope() -> None:
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(fd), ctypes.c_uint32(0))

    return scope


# Run inside the sandbox as an editor terminal's pid 1 before the command line's shell: the
# same domain `in_child` makes, entered from within (the editor, not the agent, starts that
# process tree). Where it cannot, the command does not run (126): fail closed.
_SCOPE_THEN_EXEC = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "attr = (ctypes.c_uint64 * 3)(0, 0, 1)\n"
    "fd = libc.syscall(ctypes.c_long(444), attr, ctypes.c_size_t(24), ctypes.c_uint32(0))\n"
    "if fd < 0 or libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(ctypes.c_long(446), ctypes.c_int(fd), "
    "ctypes.c_uint32(0)) != 0:\n"
    "    sys.stderr.write('hermes-acp: could not scope abstract sockets; not run\\n'); sys.exit(126)\n"
    "os.close(fd)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def scoped_exec(
    argv: list[str], bwrap: str | None, python: str, unix_table: str = "/proc/net/unix"
) -> list[str]:
    """`argv` (run inside the sandbox) entered through `python` into a domain that scopes
    the host's abstract sockets, for a command the editor starts in its terminal; `argv`
    as it is where the kernel cannot scope (before 6.12) or `bwrap` is setuid, and where
    the host has no abstract socket to reach (`unix_table`, the agent's network namespace,
    which the sandbox shares): that Python costs every such command ~25 ms, and Zed runs
    every command in its terminal. A host socket made while the command runs is not scoped."""
    if bwrap is None or _ruleset(bwrap) is None or not has_abstract_sockets(unix_table):
        return argv
    return [python, "-I", "-S", "-c", _SCOPE_THEN_EXEC, *argv]


def has_abstract_sockets(unix_table: str = "/proc/net/unix") -> bool:
    """Whether any unix socket in this network namespace has an abstract name (`@…` in
    the kernel's table: listening, bound or connected alike); True when the table cannot be
    read (fail closed)."""
    try:
        with open(unix_table, "rb") as table:
            next(table, None)  # the header
            return any(b" @" in line for line in table)
    except OSError:
        return True
