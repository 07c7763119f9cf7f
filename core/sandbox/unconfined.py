"""Commands that run without the sandbox (`sandbox = "off"`, or an approved unconfined
re-run) still die with the agent: `UnconfinedGuard` kills the command's process group when
the agent dies, kill -9 included (`group_watcher`).
"""

from __future__ import annotations

import os

from hermes_core.sandbox.group_watcher import GroupWatcher


class UnconfinedGuard(GroupWatcher):
    """Kills the command's process group when the agent dies; `release()` once it is over."""

    __slots__ = ()

    def __init__(self, process_group: int) -> None:
        read_fd, write_fd = os.pipe()  # neither end is inherited by the command
        super().__init__(read_fd, write_fd, process_group)
