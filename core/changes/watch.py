"""Which files the user changed in the workspace between the agent's turns.

The loop drains the changes at the start of a turn into `turn_preamble`, so the model
re-reads those files instead of trusting what it saw before. (The turn side, drain and
bookkeeping, is `hermes_core.loop.turn_context.ChangeLedger`; what to watch is
`hermes_core.changes.watch_tree`.)

Whose change is it? What happens while a turn runs is the agent's (its edits, its
commands); what happens between turns is the user's. Events arrive late (grouped for
`debounce_ms`), so near a turn boundary (within `grace_ms`, or crossed since the batch
began) the file's last change time decides: its ctime, which no tool can set back, or
for a deleted file the ctime of the nearest directory left. So a turn's last command is
not blamed on the user, and a user's save just before or after a turn still counts.
What the agent's background processes write after its turn counts as the user's.

Why not `watchfiles.awatch(root)` (measured by benchmarks/bench_watch.py, one run, 5,000
source files plus 5,000 under node_modules): awatch holds one inotify watch per directory
of the whole tree, node_modules included, from a per-user budget the editor needs too;
this walks the tree itself and watches only the kept directories non-recursively: 0.15x
the kernel watches, 0.20x the memory, 0.47x the start-up, the same idle CPU, 1.4x the
notice delay (85 vs 60 ms, both far below a turn). awatch also names what .gitignore
excludes and cannot tell the agent's writes from the user's. On macOS and Windows, where
one recursive watch is cheap, the roots are watched recursively and filtered here.

Nothing here raises into the agent: a missing root, a tree too large, a kernel limit or an
unreadable ignore file is logged to stderr and the watcher reports less (at worst nothing).
It runs no process: .gitignore is read by `hermes_core.fence.gitignore`, never by asking git.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from watchfiles.main import Change  # not the package: its __init__ imports multiprocessing

from hermes_core.changes.watch_shared import Batch, Subscriber, TreeSpec, WatchedTree, join, leave
from hermes_core.changes.watch_tree import DEFAULT_IGNORE_DIRS
from hermes_core.loop.turn_context import MAX_CHANGED_FILES, ChangeLedger

log = logging.getLogger(__name__)

MAX_WATCHED_DIRS = 20_000  # beyond this the workspace is not watched (one inotify watch each)
START_SLACK_NS = 20_000_000  # file timestamps come from a coarse clock that lags up to a tick
STOP_WAIT_SECONDS = 2.0

_WINDOWS = sys.platform == "win32"
# One recursive watch is one kernel object on macOS (FSEvents) and Windows; elsewhere
# (inotify, polling) it costs one watch per directory, so we pick the directories.
_RECURSIVE_IS_CHEAP = sys.platform in ("darwin", "win32")


class WorkspaceWatcher(ChangeLedger, Subscriber):
    """Notices files the user changed under `roots` between turns. One per session; the
    sessions watching the same roots share the kernel watcher (`watch_shared.WatchedTree`),
    each judging every change against its own turns.

    `start()` once, `turn_started()` / `turn_finished()` around every turn, `drain()`
    for the changes since the last drain, `aclose()` at the end (the turn side is
    `ChangeLedger`'s).
    """

    def __init__(
        self,
        roots: Iterable[Path | str],
        *,
        ignore_dirs: Iterable[str] = DEFAULT_IGNORE_DIRS,
        debounce_ms: int = 50,
        grace_ms: int = 1_000,
        max_entries: int = MAX_CHANGED_FILES,
        use_gitignore: bool = True,
        force_polling: bool | None = None,
        poll_delay_ms: int = 1_000,
    ) -> None:
        super().__init__(max_entries)
        self._given_roots = tuple(os.path.abspath(root) for root in roots)
        self._ignore_dirs = frozenset(ignore_dirs)
        self._debounce_ms = max(1, debounce_ms)
        step_ms = min(50, self._debounce_ms)
        self._force_polling = _should_poll() if force_polling is None else force_polling
        self._poll_delay_ms = poll_delay_ms
        # Events can arrive this long after the change that caused them.
        latency_ms = self._debounce_ms + 2 * step_ms
        if self._force_polling:
            latency_ms += poll_delay_ms
        self._grace_s = (grace_ms + latency_ms) / 1000
        self._use_gitignore = use_gitignore
        self._recursive = _RECURSIVE_IS_CHEAP
        self._tree: WatchedTree | None = None

    # -- lifecycle ----------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True while changes are being noticed."""
        return self._tree is not None and not self._closed and self._tree.watching

    @property
    def watched_directories(self) -> int:
        """Directories holding a kernel watch of ours (on macOS and Windows: the roots)."""
        return self._tree.watched_directories if self.watching and self._tree is not None else 0

    async def _begin(self) -> None:
        spec = TreeSpec(
            roots=self._given_roots,
            ignore_dirs=self._ignore_dirs,
            debounce_ms=self._debounce_ms,
            force_polling=self._force_polling,
            poll_delay_ms=self._poll_delay_ms,
            use_gitignore=self._use_gitignore,
            recursive=self._recursive,
            max_dirs=MAX_WATCHED_DIRS,
        )
        tree = self._tree = join(spec, self)
        await asyncio.shield(asyncio.wrap_future(tree.ready))
        self._roots = tree.roots

    async def aclose(self) -> None:
        """Stop watching (promptly: the shared watcher stops with its last session). Idempotent."""
        self._closed = True
        tree, self._tree = self._tree, None
        if tree is None or not leave(tree, self):
            return
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(tree.exited)), STOP_WAIT_SECONDS)
        except TimeoutError:
            log.warning("The workspace watcher did not stop within %.1fs", STOP_WAIT_SECONDS)

    # -- judging (the tree's thread) --------------------------------------------------

    def take(self, batch: Batch) -> None:
        if not self._closed:  # a batch already on its way when this session closed
            self._attribute(batch.changes, batch.since, batch)

    def _attribute(self, changes: dict[str, set[Change]], since: float, batch: Batch | None = None) -> None:
        """Whose changes these are. Near a turn boundary, or past one since the batch
        began (a thread starved on a loaded machine handles events late), the file's own
        change time decides; otherwise whether a turn runs now."""
        in_turn, last_boundary, turns = self.turn_state()
        near_boundary = last_boundary is not None and (
            last_boundary >= since or time.monotonic() - last_boundary <= self._grace_s
        )
        users: dict[str, bool] = {}
        agents: list[str] = []
        for path, kinds in changes.items():
            by_agent = in_turn
            if near_boundary:
                changed_at = (
                    _change_time_ns(path) if batch is None else batch.change_time_ns(path, _change_time_ns)
                )
                if changed_at is not None:
                    by_agent = _within_turns(changed_at, turns)
            if by_agent:
                agents.append(path)
            else:
                users[path] = Change.added in kinds
        ignored: set[str] = set()
        if users and batch is not None:
            ignored = batch.gitignored(list(users))
        elif users and self._tree is not None:
            ignored = self._tree.gitignored(list(users))
        self.record(agents, {path: created for path, created in users.items() if path not in ignored})


def _change_time_ns(path: str) -> int | None:
    """When this path last changed; for a removed path, when its nearest surviving
    directory did (the removal changed that directory, so it is an upper bound)."""
    current = path
    while True:
        try:
            stat = os.lstat(current)
        except OSError:
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent
            continue
        # ctime cannot be set from user space (tar, cp -p, touch -d keep mtime old);
        # on Windows st_ctime is the creation time, so mtime it is.
        return stat.st_mtime_ns if _WINDOWS else max(stat.st_mtime_ns, stat.st_ctime_ns)


def _within_turns(changed_at: int, turns: tuple[tuple[int, int | None], ...]) -> bool:
    return any(
        started - START_SLACK_NS <= changed_at and (finished is None or changed_at <= finished)
        for started, finished in turns
    )


def _should_poll() -> bool:
    """Filesystem events do not cross from Windows into WSL; watchfiles polls there too."""
    setting = os.environ.get("WATCHFILES_FORCE_POLLING")
    if setting:
        return setting.lower() not in ("false", "disable", "disabled")
    return sys.platform.startswith("linux") and "microsoft" in platform.release().lower()
