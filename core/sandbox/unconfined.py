"""Commands that run without the sandbox (`sandbox = "off"`, or an approved unconfined
re-run) still die with the agent: `UnconfinedGuard` starts a tiny watcher that kills the
command's process group when the agent's end of a pipe closes, which a kill -9 of the agent
does.
"""

from __future__ import annotations

import logging
import os
import subprocess

logger = logging.getLogger(__name__)


class UnconfinedGuard:
    """Kills a process group when the agent dies (kill -9 included).

    A watcher `sh` reads a pipe whose only writer is the agent. When the agent dies the
    kernel closes that end, `read` sees end of file and the watcher kills the group
    (grandchildren included, unlike a parent-death signal, which reaches only the direct
    child). A normal end writes "done" first, so the watcher leaves quietly.
    """

    __slots__ = ("_process", "_write_fd")

    def __init__(self, process_group: int) -> None:
        read_fd, write_fd = os.pipe()
        os.set_inheritable(write_fd, False)
        script = f'IFS= read -r line; [ "$line" = done ] || kill -s KILL -- -{int(process_group)} 2>/dev/null'
        try:
            self._process = subprocess.Popen(
                ["/bin/sh", "-c", script],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a kill of the command's group must not take it along
            )
        finally:
            os.close(read_fd)
        self._write_fd: int | None = write_fd

    def release(self) -> None:
        """The command is over: let the watcher go without killing anything."""
        if self._write_fd is None:
            return
        fd, self._write_fd = self._write_fd, None
        try:
            os.write(fd, b"done\n")
        except OSError:
            logger.debug("the unconfined-command watcher %s was already gone", self._process.pid)
        finally:
            os.close(fd)
