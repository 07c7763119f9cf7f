"""A process group that dies with the agent, kill -9 included, grandchildren too.

A watcher `sh` reads a pipe whose only writer is the agent: first the group's number, then
either "done" (a normal end: it leaves) or end of file, which the kernel gives it when the
agent dies and its end closes: then it kills the group. A parent-death signal would reach
only the direct child; the group takes the grandchildren along. Unconfined commands
(`unconfined`) and stdio MCP servers (`hermes_core.mcp.guard`) both die this way.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

log = logging.getLogger(__name__)

SH = "/bin/sh"
# The group is checked to be a number: nothing else is ever killed. A "done" (or nothing)
# where the group should be means the watched process never started: the watcher leaves.
_WATCHER = (
    'IFS= read -r group || exit 0; case "$group" in ""|*[!0-9]*) exit 0;; esac; '
    'IFS= read -r line; [ "$line" = done ] || kill -s KILL -- "-$group" 2>/dev/null'
)
# Then, where the watched processes carry a marker variable (`MARKER=group`, exported by
# their launcher), whatever still carries it: a child that left the group (`setsid`, a
# daemon's double fork) keeps its environment. The agent's own Python (isolated, no site)
# replaces the watcher for it and looks through /proc (`_SWEEP_CODE`).
_SWEEP = '; exec "$1" -I -S -c "$2" MARKER "$group"'
# Each process is held by a pidfd before its environment is read, and killed through that
# pidfd only if it is still running once read: a process that exits and whose pid another
# of the user's processes takes meanwhile is never the one killed (a `kill PID` after a
# scan would hit whoever has the pid by then). A few rounds for what forks meanwhile;
# nothing found ends it. Where the kernel has no pidfds (before 5.3), a kill by pid.
_SWEEP_CODE = """
import os, select, signal, sys
wanted = sys.argv[1].encode() + b"=" + sys.argv[2].encode()
me = os.getpid()
for _ in range(3):
    found = False
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            fd = os.pidfd_open(int(entry))
        except OSError as error:
            if error.errno != 38:
                continue
            fd = None
        try:
            with open("/proc/" + entry + "/environ", "rb") as environ:
                if wanted not in environ.read().split(b"\\0"):
                    continue
            if fd is None:
                os.kill(int(entry), signal.SIGKILL)
            elif not select.select([fd], [], [], 0)[0]:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            else:
                continue
            found = True
        except OSError:
            pass
        finally:
            if fd is not None:
                os.close(fd)
    if not found:
        break
"""


class GroupWatcher:
    """The watcher on the reading end `read_fd` (closed here; the watcher has it) of the
    pipe whose writing end `write_fd` the agent keeps, not inherited, until `release()`.
    `group` is the group to kill, when the agent knows it; otherwise whoever learns it
    writes it to the pipe (a stdio MCP server's launcher). `marker`: a variable the
    launcher exports as the group's number; whatever carries it is killed too, at the end
    ("done" included: what outlives the stopped server is its leftover)."""

    __slots__ = ("_process", "_write_fd")

    def __init__(
        self, read_fd: int, write_fd: int, group: int | None = None, marker: str | None = None
    ) -> None:
        self._write_fd: int | None = write_fd
        sweeps = bool(marker and marker.isidentifier() and sys.executable)
        script = _WATCHER + (_SWEEP.replace("MARKER", str(marker)) if sweeps else "")
        try:
            if group is not None:
                # Before the watcher starts: no moment where a kill -9 finds it without a group.
                os.write(write_fd, b"%d\n" % group)
            self._process = subprocess.Popen(
                [SH, "-c", script, SH, sys.executable, _SWEEP_CODE] if sweeps else [SH, "-c", script],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a kill of the watched group must not take it along
            )
        except BaseException:
            os.close(write_fd)
            self._write_fd = None
            raise
        finally:
            os.close(read_fd)

    def release(self) -> None:
        """The watched processes are over: let the watcher go without killing anything."""
        fd, self._write_fd = self._write_fd, None
        if fd is None:
            return
        try:
            os.write(fd, b"done\n")
        except OSError:
            log.debug("the process-group watcher %s was already gone", self._process.pid)
        finally:
            os.close(fd)
