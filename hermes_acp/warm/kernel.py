"""The few Linux calls the warm server needs that `os` does not expose: a process's I/O
priority (ioprio_get / ioprio_set), a pidfd's liveness (pidfd_send_signal with signal 0)
and the pidfd of a Unix socket's peer (SO_PEERPIDFD, Linux 6.5+).

Only the warm server and its children import this (ctypes is not on a cold path).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket

IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASS_SHIFT = 13
IOPRIO_CLASS_RT = 1
SO_PEERPIDFD = 77  # include/uapi/asm-generic/socket.h (x86 and the generic table alike)
PIDFD_SEND_SIGNAL = 424  # the same number on every architecture (added after the tables merged)

# (ioprio_set, ioprio_get) by machine; elsewhere the I/O priority is unknown, and unknown
# means "cannot be matched": the stub runs cold.
_IOPRIO_CALLS = {
    "x86_64": (251, 252),
    "aarch64": (30, 31),
    "riscv64": (30, 31),
    "loongarch64": (30, 31),
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _call(number: int, *args: int) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *(ctypes.c_long(arg) for arg in args)))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def ioprio_get(pid: int) -> int:
    """The I/O priority of `pid` (0: this process), as the kernel reports it: class and level."""
    calls = _IOPRIO_CALLS.get(platform.machine())
    if calls is None:
        raise OSError(errno.ENOSYS, f"ioprio_get on {platform.machine()}")
    return _call(calls[1], IOPRIO_WHO_PROCESS, pid)


def ioprio_set(value: int) -> None:
    """Set this process's I/O priority (its threads made after inherit it)."""
    calls = _IOPRIO_CALLS.get(platform.machine())
    if calls is None:
        raise OSError(errno.ENOSYS, f"ioprio_set on {platform.machine()}")
    _call(calls[0], IOPRIO_WHO_PROCESS, 0, value)


def is_realtime(ioprio: int) -> bool:
    """The real-time class: only CAP_SYS_ADMIN or CAP_SYS_NICE may set it."""
    return ioprio >> IOPRIO_CLASS_SHIFT == IOPRIO_CLASS_RT


def peer_pidfd(connection: socket.socket) -> int | None:
    """A pidfd of the process that connected; None on a kernel without SO_PEERPIDFD.
    OSError when the kernel has it but the peer is already gone."""
    try:
        return connection.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError as exc:
        if exc.errno == errno.ENOPROTOOPT:
            return None  # before 6.5: the option is unknown
        raise


def pidfd_alive(pidfd: int) -> bool:
    """Whether the process behind `pidfd` has not exited (a zombie still counts: its pid
    is not free for reuse until it is reaped)."""
    try:
        _call(PIDFD_SEND_SIGNAL, pidfd, 0, 0, 0)
    except ProcessLookupError:  # ESRCH
        return False
    return True
