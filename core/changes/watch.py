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
import contextlib
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from watchfiles.main import Change  # not the package: its __init__ imports multiprocessing

from hermes_core.changes.watch_tree import (
    DEFAULT_IGNORE_DIRS,
    GitIgnores,
    TooLarge,
    WorkspaceFilter,
    is_real_dir,
    walk,
)
from hermes_core.loop.turn_context import MAX_CHANGED_FILES, ChangeLedger, is_within, parents

log = logging.getLogger(__name__)

MAX_WATCHED_DIRS = 20_000  # beyond this the workspace is not watched (one inotify watch each)
START_SLACK_NS = 20_000_000  # file timestamps come from a coarse clock that lags up to a tick
STOP_WAIT_SECONDS = 2.0

_WINDOWS = sys.platform == "win32"
# One recursive watch is one kernel object on macOS (FSEvents) and Windows; elsewhere
# (inotify, polling) it costs one watch per directory, so we pick the directories.
_RECURSIVE_IS_CHEAP = sys.platform in ("darwin", "win32")


class WorkspaceWatcher(ChangeLedger):
    """Notices files the user changed under `roots` between turns. One per session.

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
        self._given_roots = [Path(root) for root in roots]
        self._ignore_dirs = frozenset(ignore_dirs)
        self._debounce_ms = max(1, debounce_ms)
        self._step_ms = min(50, self._debounce_ms)
        self._force_polling = _should_poll() if force_polling is None else force_polling
        self._poll_delay_ms = poll_delay_ms
        # Events can arrive this long after the change that caused them.
        latency_ms = self._debounce_ms + 2 * self._step_ms
        if self._force_polling:
            latency_ms += poll_delay_ms
        self._grace_s = (grace_ms + latency_ms) / 1000
        self._use_gitignore = use_gitignore

        self._filter: WorkspaceFilter | None = None
        self._gits: dict[str, GitIgnores | None] = {}
        self._dirs: set[str] = set()
        self._recursive = _RECURSIVE_IS_CHEAP

        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exited: asyncio.Future[None] | None = None

    # -- lifecycle ----------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True while changes are being noticed."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    @property
    def watched_directories(self) -> int:
        """Directories holding a kernel watch of ours (on macOS and Windows: the roots)."""
        if not self.watching:
            return 0
        return len(self._roots) if self._recursive else len(self._dirs)

    async def _begin(self) -> None:
        try:
            notifier = await asyncio.to_thread(self._prepare)
        except Exception as exc:
            log.warning("Not watching the workspace for changes: %s%s", exc, _limit_advice(exc))
            return
        if notifier is None:
            return
        if self._closed:  # aclose() ran while the tree was being walked
            _close(notifier)
            return
        loop = asyncio.get_running_loop()
        self._exited = loop.create_future()
        self._thread = threading.Thread(
            target=self._run,
            args=(notifier, loop, self._exited),
            name="hermes-workspace-watcher",
            daemon=True,
        )
        self._thread.start()

    async def aclose(self) -> None:
        """Stop watching (promptly: within one notifier step). Idempotent."""
        self._closed = True
        self._stop.set()
        thread = self._thread
        if thread is None:
            return
        assert self._exited is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._exited), STOP_WAIT_SECONDS)
        except TimeoutError:
            log.warning("The workspace watcher did not stop within %.1fs", STOP_WAIT_SECONDS)

    # -- setup (worker thread) -------------------------------------------------------

    def _prepare(self) -> object | None:
        roots: list[str] = []
        for given in self._given_roots:
            try:
                resolved = given.resolve()
            except OSError:
                resolved = given.absolute()
            if not resolved.is_dir():
                log.warning("Not watching %s for changes: it is not a directory", given)
                continue
            roots.append(str(resolved))
        # A root inside another root is already covered.
        roots = [r for r in roots if not any(p in roots for p in parents(r))]
        roots = list(dict.fromkeys(roots))
        if not roots:
            log.warning("Not watching the workspace for changes: no root directory exists")
            return None
        self._roots = roots
        self._filter = WorkspaceFilter(roots, self._ignore_dirs)
        if self._use_gitignore:
            for root in roots:
                self._gits[root] = GitIgnores.open(root)
        if not self._recursive:
            self._dirs, _ = self._walk(roots, collect_files=False)
        return self._notifier()

    def _notifier(self) -> object:
        from watchfiles._rust_notify import RustNotify

        if self._recursive:
            # notify walks the tree itself here; an unreadable directory must not stop it.
            return RustNotify(self._roots, False, self._force_polling, self._poll_delay_ms, True, True)
        # Errors are not ignored on this path: watchfiles would swallow a full inotify
        # budget along with permission errors and leave us watching half the tree.
        for attempt in range(3):
            try:
                return RustNotify(
                    sorted(self._dirs), False, self._force_polling, self._poll_delay_ms, False, False
                )
            except FileNotFoundError:
                if attempt == 2:
                    raise
                # A directory vanished between the walk and the watch.
                self._dirs = {d for d in self._dirs if is_real_dir(d)}
        raise AssertionError("unreachable")

    def _walk(self, tops: list[str], *, collect_files: bool) -> tuple[set[str], list[str]]:
        assert self._filter is not None
        return walk(
            tops,
            gits=self._gits,
            keep=self._filter,
            ignore_dirs=self._ignore_dirs,
            known=len(self._dirs),
            limit=MAX_WATCHED_DIRS,
            collect_files=collect_files,
        )

    # -- the watching loop (worker thread) -------------------------------------------

    def _run(self, notifier: object, loop: asyncio.AbstractEventLoop, exited: asyncio.Future[None]) -> None:
        try:
            self._watch(notifier)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may be gone already
                loop.call_soon_threadsafe(_resolve, exited)

    def _watch(self, notifier: object) -> None:
        failures = 0
        # A batch holds what happened since the previous one was taken (less a step of slack).
        since = time.monotonic()
        try:
            while not self._stop.is_set():
                try:
                    raw = notifier.watch(self._debounce_ms, self._step_ms, 0, self._stop)  # type: ignore[attr-defined]
                    taken = time.monotonic() - self._step_ms / 1000
                    if raw == "stop":
                        break
                    if isinstance(raw, set):
                        notifier = self._handle(raw, notifier, since)
                    since = taken
                    failures = 0
                except TooLarge as exc:
                    log.warning("Stopped watching the workspace for changes: %s", exc)
                    break
                except Exception as exc:
                    failures += 1
                    if failures >= 3:
                        log.warning(
                            "Stopped watching the workspace for changes: %s%s", exc, _limit_advice(exc)
                        )
                        break
                    log.debug("Workspace watcher error, rebuilding: %s", exc)
                    notifier = self._replace(notifier)[0]
        finally:
            _close(notifier)

    def _handle(self, raw: set[tuple[int, str]], notifier: object, since: float) -> object:
        batches = [raw]
        while batches:
            changes = self._decode(batches.pop())
            if not changes:
                continue
            if not self._recursive:
                new_dirs = [
                    path
                    for path, kinds in changes.items()
                    if Change.added in kinds and path not in self._dirs and is_real_dir(path)
                ]
                if new_dirs:
                    notifier, leftover = self._replace(notifier, new_dirs, changes)
                    if leftover:
                        batches.append(leftover)
            self._attribute(changes, since)
        return notifier

    def _decode(self, raw: set[tuple[int, str]]) -> dict[str, set[Change]]:
        assert self._filter is not None
        changes: dict[str, set[Change]] = {}
        for code, path in raw:
            change = Change(code)
            if self._filter(change, path):
                changes.setdefault(path, set()).add(change)
        return changes

    def _replace(
        self,
        notifier: object,
        new_dirs: list[str] | None = None,
        changes: dict[str, set[Change]] | None = None,
    ) -> tuple[object, set[tuple[int, str]] | None]:
        """A notifier that also watches `new_dirs`; files already inside them count as added.

        The new notifier starts before the old one is emptied and closed, so no event
        falls between them; what the old one still held comes back as `leftover`.
        """
        previous = self._dirs = {d for d in self._dirs if is_real_dir(d)}
        if new_dirs:
            try:
                added_dirs, files = self._walk(new_dirs, collect_files=True)
            except TooLarge as exc:
                log.warning("Not watching the new directories %s: %s", new_dirs[:3], exc)
                return notifier, None
            self._dirs = previous | added_dirs
            if changes is not None:
                for path in files:
                    changes.setdefault(path, set()).add(Change.added)
        try:
            fresh = self._notifier()
        except Exception as exc:
            self._dirs = previous
            log.warning("Could not extend the workspace watcher: %s%s", exc, _limit_advice(exc))
            return notifier, None
        try:
            leftover = notifier.watch(1, 1, 1, None)  # type: ignore[attr-defined]
        except Exception:
            leftover = None
        _close(notifier)
        return fresh, leftover if isinstance(leftover, set) else None

    def _attribute(self, changes: dict[str, set[Change]], since: float) -> None:
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
                changed_at = _change_time_ns(path)
                if changed_at is not None:
                    by_agent = _within_turns(changed_at, turns)
            if by_agent:
                agents.append(path)
            else:
                users[path] = Change.added in kinds
        ignored = self._gitignored(list(users)) if users else set()
        self.record(agents, {path: created for path, created in users.items() if path not in ignored})

    def _gitignored(self, paths: list[str]) -> set[str]:
        ignored: set[str] = set()
        for root, git in self._gits.items():
            if git is None:
                continue
            inside = [p for p in paths if is_within(p, root)]
            if inside:
                ignored |= git.ignored(inside)
        return ignored


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


def _close(notifier: object) -> None:
    with contextlib.suppress(Exception):
        notifier.close()  # type: ignore[attr-defined]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _limit_advice(exc: BaseException) -> str:
    if "watch limit" in str(exc) or "No space left" in str(exc):
        return " (raise fs.inotify.max_user_watches, or open a smaller folder)"
    return ""


def _should_poll() -> bool:
    """Filesystem events do not cross from Windows into WSL; watchfiles polls there too."""
    setting = os.environ.get("WATCHFILES_FORCE_POLLING")
    if setting:
        return setting.lower() not in ("false", "disable", "disabled")
    return sys.platform.startswith("linux") and "microsoft" in platform.release().lower()
