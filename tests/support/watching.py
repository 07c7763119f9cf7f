"""What a server's workspace watchers watch, read from /proc: the events a test waits on.

The server says nothing on the wire when its watcher starts or takes in a change, but the
kernel shows both: every inotify watch is a line in /proc/<pid>/fdinfo naming the inode
it watches, and the watcher adds a watch for each new directory only after it has taken
in every event before that directory's (inotify keeps order).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

from tests.support.waiting import until

_settle_names = itertools.count(1)


def watched_inodes(pid: int) -> list[int]:
    """The inodes the process's inotify instances watch, once per watch."""
    inodes: list[int] = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) != "anon_inode:inotify":
                continue
            for line in Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines():
                if line.startswith("inotify "):
                    fields = dict(part.split(":", 1) for part in line.split()[1:] if ":" in part)
                    inodes.append(int(fields["ino"], 16))
    return inodes


async def until_watched(pid: int, directory: Path) -> None:
    """Until a watcher of the process watches `directory`."""
    inode = directory.stat().st_ino
    await until(lambda: inode in watched_inodes(pid), f"a watch on {directory}")


async def watcher_caught_up(pid: int, root: Path) -> None:
    """Until the watcher of `root` has taken in every change made under it before the call.

    A new directory gets its watch while the watcher handles the batch of events it came
    in; a second directory's watch means the first batch was handled to the end. The two
    directories stay (a directory that exists is never reported as a change).
    """
    for _ in range(2):
        directory = root / f"settle-{next(_settle_names)}"
        directory.mkdir()
        await until_watched(pid, directory)
