"""Stdio MCP servers die with the agent, kill -9 included, grandchildren too.

The watcher is the one unconfined commands use (`hermes_core.sandbox.group_watcher`); what
differs is who learns the group: the MCP SDK starts the server itself (in a new session, so
its group is its pid) and does not tell us the pid. So the watcher's pipe is a FIFO in a
private directory, and the server is started through a one-line `sh` that writes its own
pid (the group's) to the FIFO and then `exec`s the server: the watcher has the group before
the server runs a single instruction, with no window where a kill -9 would leave it behind.

A normal end writes "done" after the SDK has stopped the server, and the watcher leaves.
On Windows (no `sh`, and the SDK puts the server in a Job Object) there is no guard.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from hermes_core.sandbox.group_watcher import SH, GroupWatcher

# The variable every process the server starts inherits: one that leaves the group
# (`setsid`, a daemon's double fork) is still found by it and killed with the server.
MARKER = "HERMES_ACP_MCP_SERVER"
# $0 is the FIFO, "$@" the server's command line.
_LAUNCHER = f'export {MARKER}=$$ && printf "%s\\n" "$$" > "$0" && exec "$@"'


class McpServerGuard:
    """One stdio server's watcher. `launch(command, args)` is the command line to start
    instead; `release()` once the server is stopped; `forget_path()` once it has started."""

    __slots__ = ("_directory", "_fifo", "_watcher")

    def __init__(self) -> None:
        self._directory: str | None = tempfile.mkdtemp(prefix="hermes-mcp-")
        self._fifo = os.path.join(self._directory, "guard")
        self._watcher: GroupWatcher | None = None
        try:
            os.mkfifo(self._fifo, 0o600)
            # Read and write: the agent holds a writer for its whole life (so the watcher
            # sees end of file only when the agent dies) and opening never blocks.
            write_fd = os.open(self._fifo, os.O_RDWR | os.O_CLOEXEC)
            try:
                read_fd = os.open(self._fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                os.set_blocking(read_fd, True)
            except BaseException:
                os.close(write_fd)
                raise
            self._watcher = GroupWatcher(read_fd, write_fd, marker=MARKER)
        except BaseException:
            self.release()
            raise

    @staticmethod
    def available() -> bool:
        return sys.platform != "win32" and os.path.exists(SH) and hasattr(os, "mkfifo")

    def launch(self, command: str, args: list[str]) -> tuple[str, list[str]]:
        """The command line that tells the watcher the server's group, then is the server."""
        return SH, ["-c", _LAUNCHER, self._fifo, command, *args]

    def forget_path(self) -> None:
        """The server has started (its pid is written): the FIFO's name is not needed."""
        directory, self._directory = self._directory, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def release(self) -> None:
        """The server is stopped: let the watcher go without killing anything (a server that
        never started wrote no group: the "done" in its place ends the watcher as well)."""
        self.forget_path()
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.release()
