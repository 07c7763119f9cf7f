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
# daemon's double fork) keeps its environment. One `grep` over /proc, a few rounds for what
# forks meanwhile; nothing to find (or no /proc) ends it at once.
_SWEEP = (
    "; for _ in 1 2 3; do found=; "
    'for e in $(grep -lzx "MARKER=$group" /proc/[0-9]*/environ 2>/dev/null); do '
    'p=${e#/proc/}; kill -s KILL "${p%/environ}" 2>/dev/null && found=1; done; '
    '[ -n "$found" ] || break; done'
)


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
        script = _WATCHER + (_SWEEP.replace("MARKER", marker) if marker and marker.isidentifier() else "")
        try:
            if group is not None:
                # Before the watcher starts: no moment where a kill -9 finds it without a group.
                os.write(write_fd, b"%d\n" % group)
            self._process = subprocess.Popen(
                [SH, "-c", script],
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
