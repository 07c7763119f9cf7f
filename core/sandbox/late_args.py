"""A local launch's mounts reach bwrap on a pipe (`--args FD`), written once worked out,
while bwrap is already starting.

Working out what to mount (`Sandbox.launch_options`: the file system as it is now) takes
a few ms of Python, and starting bwrap (exec, its libraries) a few ms more; bwrap reads its
options first thing. So the launch thread starts bwrap at once with only its own
descriptors and the command, and the event loop writes the options meanwhile: the two
overlap on a machine with two cores, instead of one waiting for the other.

bwrap runs nothing before it has read the pipe to its end. The options end with a marker
(`--setenv` of a fresh nonce) that the command line checks before anything else, so a
launch whose options were cut short (the agent killed while writing them) runs nothing:
without the marker the line exits 126. A launch whose options could not be worked out gets
an option bwrap does not know, and dies without starting anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import weakref
from pathlib import Path

MARKER = "HERMES_ACP_LAUNCH"
_ABANDONED = b"--hermes-acp-launch-abandoned\0"  # not an option of bwrap's: it exits at once
_CAPACITY = 1 << 20  # bytes the pipe holds, so the event loop never waits on bwrap


class LateArgs:
    """The pipe that carries one launch's options to bwrap."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe2(os.O_CLOEXEC)
        self._fds = [self._read, self._write]
        weakref.finalize(self, _close_all, self._fds)
        os.set_blocking(self._write, False)
        with contextlib.suppress(OSError):  # the default 64 KiB holds a launch's options too
            fcntl.fcntl(self._write, fcntl.F_SETPIPE_SZ, _CAPACITY)
        self._nonce = secrets.token_hex(8)

    @staticmethod
    def fits(argv: list[str]) -> bool:
        """Whether `argv` is a shell line that can check the marker (`bash -c LINE`)."""
        return len(argv) >= 3 and Path(argv[0]).name in ("bash", "zsh") and argv[1] == "-c"

    def options(self) -> list[str]:
        return ["--args", str(self._read)]

    @property
    def child_fd(self) -> int:
        """What bwrap must inherit (`pass_fds`)."""
        return self._read

    def checked(self, argv: list[str]) -> list[str]:
        """`argv` (a `bash -c` line, `fits`) that runs only when the options arrived whole."""
        check = f'[ "${{{MARKER}:-}}" = {self._nonce} ] || exit 126; unset {MARKER}; '
        return [argv[0], "-c", check + argv[2], *argv[3:]]

    def send(self, options: list[str]) -> None:
        """Hand bwrap its options (NUL-separated, the marker last) and close the pipe."""
        data = "\0".join([*options, "--setenv", MARKER, self._nonce, ""]).encode()
        try:
            self._write_all(data)
        finally:
            self._close(self._write)  # the read end is the launch thread's (`close_child_end`)

    def abandon(self) -> None:
        """No options: bwrap exits without starting anything."""
        with contextlib.suppress(OSError):
            self._write_all(_ABANDONED)
        self._close(self._write)

    def close_child_end(self) -> None:
        """After bwrap started (or could not): it has its own copy."""
        self._close(self._read)

    def _write_all(self, data: bytes) -> None:
        if self._write not in self._fds:
            raise OSError("the launch's options were already sent")
        view = memoryview(data)
        while view:
            # Never blocks: a launch's options fit the pipe; a full pipe raises (the launch fails).
            written = os.write(self._write, view)
            view = view[written:]

    def _close(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.remove(fd)
            os.close(fd)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()
