"""Stdio MCP servers die with the agent, kill -9 included, grandchildren too.

The mechanism is the one unconfined commands use (`hermes_core.sandbox.unconfined`): a watcher
`sh` reads a pipe whose only writer is the agent; when the agent dies the kernel closes
that end, the watcher reads end of file and kills the server's process group. What
differs is who learns the group: the MCP SDK starts the server itself (in a new session,
so its group is its pid) and does not tell us the pid. So the pipe is a FIFO in a private
directory, and the server is started through a one-line `sh` that writes its own pid (the
group's) to the FIFO and then `exec`s the server: the watcher has the group before the
server runs a single instruction, with no window where a kill -9 would leave it behind.

A normal end writes "done" after the SDK has stopped the server, and the watcher leaves.
On Windows (no `sh`, and the SDK puts the server in a Job Object) there is no guard.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile

log = logging.getLogger(__name__)

_SH = "/bin/sh"
# Reads the server's process group, then waits: "done" is a normal end, end of file is the
# agent's death. The group is checked to be a number: nothing else is ever killed.
_WATCHER = (
    'IFS= read -r group || exit 0; case "$group" in ""|*[!0-9]*) exit 0;; esac; '
    'IFS= read -r line; [ "$line" = done ] || kill -s KILL -- "-$group" 2>/dev/null'
)
# $0 is the FIFO, "$@" the server's command line.
_LAUNCHER = 'printf "%s\\n" "$$" > "$0" && exec "$@"'


class McpServerGuard:
    """One stdio server's watcher. `launch(command, args)` is the command line to start
    instead; `release()` once the server is stopped; `forget_path()` once it has started."""

    __slots__ = ("_directory", "_fifo", "_process", "_write_fd")

    def __init__(self) -> None:
        self._directory: str | None = tempfile.mkdtemp(prefix="hermes-mcp-")
        self._fifo = os.path.join(self._directory, "guard")
        self._write_fd: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        try:
            os.mkfifo(self._fifo, 0o600)
            # Read and write: the agent holds a writer for its whole life (so the watcher
            # sees end of file only when the agent dies) and opening never blocks.
            self._write_fd = os.open(self._fifo, os.O_RDWR | os.O_CLOEXEC)
            read_fd = os.open(self._fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.set_blocking(read_fd, True)
            try:
                self._process = subprocess.Popen(
                    [_SH, "-c", _WATCHER],
                    stdin=read_fd,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # a kill of the server's group must not take it along
                )
            finally:
                os.close(read_fd)
        except BaseException:
            self.release()
            raise

    @staticmethod
    def available() -> bool:
        return sys.platform != "win32" and os.path.exists(_SH) and hasattr(os, "mkfifo")

    def launch(self, command: str, args: list[str]) -> tuple[str, list[str]]:
        """The command line that tells the watcher the server's group, then is the server."""
        return _SH, ["-c", _LAUNCHER, self._fifo, command, *args]

    def forget_path(self) -> None:
        """The server has started (its pid is written): the FIFO's name is not needed."""
        directory, self._directory = self._directory, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def release(self) -> None:
        """The server is stopped: let the watcher go without killing anything."""
        self.forget_path()
        fd, self._write_fd = self._write_fd, None
        if fd is None:
            return
        try:
            # After the pid it reads as the normal end; instead of one (the server never
            # started), it is not a number and the watcher leaves as well.
            os.write(fd, b"done\n")
        except OSError:
            log.debug("the MCP server watcher was already gone")
        finally:
            os.close(fd)
