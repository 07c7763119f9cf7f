"""Which files the user changed in the workspace between the agent's turns.

The agent loop asks `drain()` at the start of a turn and passes the answer to
`core.turn_context.turn_preamble`, so the model hears "since your last turn these files
changed" and re-reads them instead of trusting what it saw before.

Whose change is it? Everything that happens while a turn runs is the agent's (its
edits, the commands it ran); everything between `turn_finished()` and the next
`turn_started()` is the user's. Events reach us late (the notifier groups them for
`debounce_ms`), so an event is not judged by when it arrives alone: within
`grace_ms` of a turn boundary the watcher looks at when the file last changed (its
ctime, which no tool can set back, or, for a deleted file, the ctime of the nearest
directory left) and gives the change to the agent when that time falls inside a turn.
So the last command of a turn is not blamed on the user, a user's save just before
the turn started is not lost, and a user's save just after the turn ended still
counts. Away from a boundary the plain in-turn flag decides. What the agent's
background processes write after its turn ends counts as the user's.

Cost: on Linux every watched directory holds an inotify watch, a per-user budget the
editor needs too, so ignored directories (node_modules, .git, .venv, anything
.gitignore excludes) are not watched at all: the watcher walks the tree itself and
watches each kept directory non-recursively, adding directories as they appear.
On macOS and Windows, where one recursive watch is cheap, the roots are watched
recursively and ignored paths are filtered out of the events.

Nothing here raises into the agent: a root that is missing, a tree too large, a
kernel limit or a git failure is logged to stderr and the watcher reports less (at
worst nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from watchfiles import BaseFilter, Change, DefaultFilter

from core.turn_context import MAX_CHANGED_FILES

log = logging.getLogger(__name__)

DEFAULT_IGNORE_DIRS: frozenset[str] = frozenset(
    {
        # Version control and tool caches: churn the user did not author.
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".gradle",
        ".next",
        ".turbo",
        # Installed dependencies and build output: huge, and not what the user edits.
        "node_modules",
        ".venv",
        "venv",
        "dist",
        "build",
        # IDE state that changes on every click. `.vscode` stays watched: its settings,
        # tasks and launch files are written by the user and can matter to the agent.
        ".idea",
    }
)

# Editor droppings that are never the user's content: vim's write probe, swap files,
# backups, JetBrains safe-write temporaries (watchfiles' defaults, plus vim's probe).
IGNORE_NAME_PATTERNS: tuple[str, ...] = (*DefaultFilter.ignore_entity_patterns, r"^4913$")

MAX_WATCHED_DIRS = 20_000  # beyond this the workspace is not watched (one inotify watch each)
MAX_TRACKED_PATHS = 10_000  # changed paths remembered between drains; the rest are only counted
GIT_TIMEOUT_SECONDS = 5.0
START_SLACK_NS = 20_000_000  # file timestamps come from a coarse clock that lags up to a tick
STOP_WAIT_SECONDS = 2.0

_WINDOWS = sys.platform == "win32"
# One recursive watch is one kernel object on macOS (FSEvents) and Windows; elsewhere
# (inotify, polling) it costs one watch per directory, so we pick the directories.
_RECURSIVE_IS_CHEAP = sys.platform in ("darwin", "win32")


class WorkspaceWatcher:
    """Notices files the user changed under `roots` between turns. One per session.

    `start()` once, `turn_started()` / `turn_finished()` around every turn, `drain()`
    for the changes since the last drain, `aclose()` at the end.
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
        self._max_entries = max(1, max_entries)
        self._use_gitignore = use_gitignore

        self._roots: list[str] = []
        self._filter: _WorkspaceFilter | None = None
        self._gits: dict[str, _Git | None] = {}
        self._dirs: set[str] = set()
        self._recursive = _RECURSIVE_IS_CHEAP

        self._lock = threading.Lock()
        self._in_turn = False
        self._turns: deque[tuple[int, int | None]] = deque(maxlen=4)  # (started, finished) wall ns
        self._last_boundary: float | None = None  # monotonic time of the last turn_started/finished
        self._pending: dict[str, bool] = {}  # path -> was created since the last drain
        self._overflow = 0

        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exited: asyncio.Future[None] | None = None
        self._started = False
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True while changes are being noticed."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    @property
    def pending(self) -> int:
        """How many user-changed paths the next drain will look at (before it drops the
        ones that came and went)."""
        with self._lock:
            return len(self._pending) + self._overflow

    @property
    def watched_directories(self) -> int:
        """Directories holding a kernel watch of ours (on macOS and Windows: the roots)."""
        if not self.watching:
            return 0
        return len(self._roots) if self._recursive else len(self._dirs)

    async def start(self) -> None:
        """Walk the workspace and begin watching; returns once changes will be noticed.

        Idempotent. Never raises for a filesystem problem: it logs and watches less.
        """
        if self._started or self._closed:
            return
        self._started = True
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

    # -- turns ---------------------------------------------------------------------

    def turn_started(self) -> None:
        """From now on changes are the agent's own work."""
        with self._lock:
            if self._in_turn:
                return
            self._in_turn = True
            self._turns.append((time.time_ns(), None))
            self._last_boundary = time.monotonic()

    def turn_finished(self) -> None:
        """From now on changes are the user's."""
        with self._lock:
            if not self._in_turn:
                return
            self._in_turn = False
            started, _ = self._turns[-1]
            self._turns[-1] = (started, time.time_ns())
            self._last_boundary = time.monotonic()

    def drain(self) -> list[str]:
        """Files the user changed since the last drain, sorted; then forgets them.

        Paths are relative to the first root when inside it (POSIX separators), else
        absolute; removed files end in " (deleted)", and a removed directory is one
        "dir/ (deleted)" line for everything it held. Files created and removed again
        in between, and directories that still exist, are left out. At most
        `max_entries` entries: when there are more, the last one says "… and N more".
        """
        with self._lock:
            pending, self._pending = self._pending, {}
            overflow, self._overflow = self._overflow, 0
        present: list[str] = []
        deleted: list[str] = []
        for path, created in pending.items():
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    continue
                exists = os.path.lexists(path)
            except OSError:
                exists = False
            if exists:
                present.append(path)
            elif not created:
                deleted.append(path)
        # A removed directory stands for the files it held: one line for `rm -rf build/`.
        deleted_set = set(deleted)
        removed_dirs: set[str] = set()
        kept: list[str] = []
        for path in deleted:
            removed_parents = [parent for parent in _parents(path) if parent in deleted_set]
            if removed_parents:
                removed_dirs.update(removed_parents)
            else:
                kept.append(path)
        entries = sorted(
            [self._display(p) for p in present]
            + [f"{self._display(p)}{'/' if p in removed_dirs else ''} (deleted)" for p in kept]
        )
        total = len(entries) + overflow
        if total <= self._max_entries:
            return entries
        shown = entries[: self._max_entries - 1]
        return [*shown, f"… and {total - len(shown)} more"]

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
        roots = [r for r in roots if not any(p in roots for p in _parents(r))]
        roots = list(dict.fromkeys(roots))
        if not roots:
            log.warning("Not watching the workspace for changes: no root directory exists")
            return None
        self._roots = roots
        self._filter = _WorkspaceFilter(roots, self._ignore_dirs)
        if self._use_gitignore:
            for root in roots:
                self._gits[root] = _Git.open(root)
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
                self._dirs = {d for d in self._dirs if _is_real_dir(d)}
        raise AssertionError("unreachable")

    def _walk(self, tops: list[str], *, collect_files: bool) -> tuple[set[str], list[str]]:
        """The directories under `tops` worth watching (tops included), and their files."""
        assert self._filter is not None
        skipped: set[str] = set()
        for root, git in self._gits.items():
            if git is not None:
                inside = [t for t in tops if _is_within(t, root)]
                if inside:
                    skipped |= git.ignored_dirs(inside)
        budget = MAX_WATCHED_DIRS - len(self._dirs)
        dirs: set[str] = set()
        files: list[str] = []
        stack = list(tops)
        while stack:
            directory = stack.pop()
            if directory in skipped or directory in dirs:
                continue
            try:
                with os.scandir(directory) as entries:
                    dirs.add(directory)  # only readable ones: watching the others would fail
                    if len(dirs) > budget:
                        raise _TooLarge(f"more than {MAX_WATCHED_DIRS:,} directories to watch")
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in self._ignore_dirs:
                                stack.append(entry.path)
                        elif collect_files and self._filter(Change.added, entry.path):
                            files.append(entry.path)
            except OSError:
                continue
        return dirs, files

    # -- the watching loop (worker thread) -------------------------------------------

    def _run(self, notifier: object, loop: asyncio.AbstractEventLoop, exited: asyncio.Future[None]) -> None:
        try:
            self._watch(notifier)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may be gone already
                loop.call_soon_threadsafe(_resolve, exited)

    def _watch(self, notifier: object) -> None:
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    raw = notifier.watch(self._debounce_ms, self._step_ms, 0, self._stop)  # type: ignore[attr-defined]
                    if raw == "stop":
                        break
                    if isinstance(raw, set):
                        notifier = self._handle(raw, notifier)
                    failures = 0
                except _TooLarge as exc:
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

    def _handle(self, raw: set[tuple[int, str]], notifier: object) -> object:
        batches = [raw]
        while batches:
            changes = self._decode(batches.pop())
            if not changes:
                continue
            if not self._recursive:
                new_dirs = [
                    path
                    for path, kinds in changes.items()
                    if Change.added in kinds and path not in self._dirs and _is_real_dir(path)
                ]
                if new_dirs:
                    notifier, leftover = self._replace(notifier, new_dirs, changes)
                    if leftover:
                        batches.append(leftover)
            self._attribute(changes)
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
        previous = self._dirs = {d for d in self._dirs if _is_real_dir(d)}
        if new_dirs:
            try:
                added_dirs, files = self._walk(new_dirs, collect_files=True)
            except _TooLarge as exc:
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

    def _attribute(self, changes: dict[str, set[Change]]) -> None:
        with self._lock:
            in_turn = self._in_turn
            near_boundary = (
                self._last_boundary is not None and time.monotonic() - self._last_boundary <= self._grace_s
            )
            turns = tuple(self._turns)
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
        with self._lock:
            for path in agents:
                # The agent's later change supersedes the user's: it saw the file to edit it.
                self._pending.pop(path, None)
            for path, created in users.items():
                if path in ignored:
                    continue
                if path in self._pending:
                    self._pending[path] = self._pending[path] or created
                elif len(self._pending) < MAX_TRACKED_PATHS:
                    self._pending[path] = created
                else:
                    self._overflow += 1

    def _gitignored(self, paths: list[str]) -> set[str]:
        ignored: set[str] = set()
        for root, git in self._gits.items():
            if git is None:
                continue
            inside = [p for p in paths if _is_within(p, root)]
            if inside:
                ignored |= git.ignored(inside)
        return ignored

    def _display(self, path: str) -> str:
        first = self._roots[0] if self._roots else None
        if first is not None and _is_within(path, first) and path != first:
            return Path(os.path.relpath(path, first)).as_posix()
        return path


class _WorkspaceFilter(DefaultFilter):
    """watchfiles' filter, judged on the path below its root: a workspace that itself
    lives under a directory called `build` is still watched."""

    def __init__(self, roots: list[str], ignore_dirs: frozenset[str]) -> None:
        super().__init__(ignore_dirs=tuple(sorted(ignore_dirs)), ignore_entity_patterns=IGNORE_NAME_PATTERNS)
        self._roots = sorted(roots, key=len, reverse=True)

    def __call__(self, change: Change, path: str) -> bool:
        for root in self._roots:
            if _is_within(path, root):
                if path == root:
                    return False
                return BaseFilter.__call__(self, change, os.path.relpath(path, root))
        return False


class _Git:
    """The repository around one root, asked in batches. Every failure reads as
    "nothing is ignored": reporting too much beats breaking the turn."""

    def __init__(self, root: str) -> None:
        self.root = root

    @classmethod
    def open(cls, root: str) -> _Git | None:
        result = _git(root, ["rev-parse", "--is-inside-work-tree"])
        if result is None or result.returncode != 0 or result.stdout.strip() != b"true":
            return None
        # The user opened a folder their repository ignores (build/, a vendored tree):
        # within it, everything would read as ignored.
        inside_ignored = _git(root, ["check-ignore", "-q", "."])
        if inside_ignored is None or inside_ignored.returncode == 0:
            return None
        return cls(root)

    def ignored(self, paths: list[str]) -> set[str]:
        """Which of these paths .gitignore excludes (tracked files never are)."""
        result = _git(self.root, ["check-ignore", "-z", "--stdin"], "\0".join(paths) + "\0")
        if result is None or result.returncode not in (0, 1):
            return set()
        return {p for p in result.stdout.decode("utf-8", "surrogateescape").split("\0") if p}

    def ignored_dirs(self, tops: list[str]) -> set[str]:
        """Untracked directories under `tops` that .gitignore excludes as a whole."""
        args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--", *tops]
        result = _git(self.root, args)
        if result is None or result.returncode != 0:
            return set()
        found: set[str] = set()
        for line in result.stdout.decode("utf-8", "surrogateescape").split("\0"):
            if line.endswith("/"):
                found.add(os.path.normpath(os.path.join(self.root, line)))
        return found


class _TooLarge(Exception):
    pass


def _git(cwd: str, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[bytes] | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(
            ["git", "-C", cwd, *args],
            input=None if stdin is None else stdin.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("git %s failed: %s", args[0], exc)
        return None


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


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _is_real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _parents(path: str) -> list[str]:
    parents = []
    current = os.path.dirname(path)
    while current and current != path:
        parents.append(current)
        path, current = current, os.path.dirname(current)
    return parents


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
