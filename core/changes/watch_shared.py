"""One kernel watcher per workspace, however many sessions watch it.

Every session used to own a watcher (a thread, an inotify instance, a watch per
directory): fifty sessions on one project held fifty of each, from a per-user budget
(fs.inotify.max_user_instances, 128 by default) the editor and the user's other programs
need too, and every change woke all fifty. A `WatchedTree` walks and watches one set of
roots once and hands each batch of changes to every session's `WorkspaceWatcher`, which
judges it against its own turns (`hermes_core.changes.watch`). The first session to start
creates it, the last to close stops it (`join` / `leave`).

The tree is shared only between watchers that would have watched the same thing: the same
roots, as given, and the same options (ignored directories, debounce, polling, .gitignore).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from watchfiles.main import Change  # not the package: its __init__ imports multiprocessing

from hermes_core.changes import inotify
from hermes_core.changes.watch_tree import GitIgnores, TooLarge, WorkspaceFilter, is_real_dir, walk
from hermes_core.loop.turn_context import is_within, parents

log = logging.getLogger("hermes_core.changes.watch")  # the watcher's own messages, as before

THREAD_NAME = "hermes-workspace-watcher"


@dataclass(frozen=True, slots=True)
class TreeSpec:
    """What a tree watches and how: two watchers with equal specs share one tree."""

    roots: tuple[str, ...]
    ignore_dirs: frozenset[str]
    debounce_ms: int
    force_polling: bool
    poll_delay_ms: int
    use_gitignore: bool
    recursive: bool
    max_dirs: int


class Batch:
    """One batch of changes, as every subscriber sees it; what the disk says about a path
    is asked once for all of them."""

    def __init__(self, changes: dict[str, set[Change]], since: float, tree: WatchedTree) -> None:
        self.changes = changes
        self.since = since  # monotonic time the batch began (less a step of slack)
        self._tree = tree
        self._times: dict[str, int | None] = {}
        self._ignored: dict[str, bool] = {}

    def change_time_ns(self, path: str, read: Callable[[str], int | None]) -> int | None:
        if path not in self._times:
            self._times[path] = read(path)
        return self._times[path]

    def gitignored(self, paths: list[str]) -> set[str]:
        unknown = [p for p in paths if p not in self._ignored]
        if unknown:
            ignored = self._tree.gitignored(unknown)
            self._ignored.update((p, p in ignored) for p in unknown)
        return {p for p in paths if self._ignored[p]}


class Subscriber:
    """What a tree hands its batches to (a session's `WorkspaceWatcher`)."""

    def take(self, batch: Batch) -> None:
        raise NotImplementedError


class WatchedTree:
    """The directories under a set of roots, watched by one thread for every subscriber."""

    def __init__(self, spec: TreeSpec) -> None:
        self.spec = spec
        self.roots: list[str] = []
        self.ready: concurrent.futures.Future[bool] = concurrent.futures.Future()
        self.exited: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._subscribers: tuple[Subscriber, ...] = ()
        self._step_ms = min(50, spec.debounce_ms)
        self._filter: WorkspaceFilter | None = None
        self._gits: dict[str, GitIgnores | None] = {}
        self._dirs: set[str] = set()
        self._stop = inotify.StopEvent()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)

    @property
    def watching(self) -> bool:
        return (
            self._thread.is_alive() and not self._stop.is_set() and self.ready.done() and self.ready.result()
        )

    @property
    def watched_directories(self) -> int:
        if not self.watching:
            return 0
        return len(self.roots) if self.spec.recursive else len(self._dirs)

    def gitignored(self, paths: list[str]) -> set[str]:
        ignored: set[str] = set()
        for root, git in self._gits.items():
            if git is None:
                continue
            inside = [p for p in paths if is_within(p, root)]
            if inside:
                ignored |= git.ignored(inside)
        return ignored

    # -- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        notifier: object | None = None
        try:
            try:
                notifier = self._prepare()
            except Exception as exc:
                log.warning("Not watching the workspace for changes: %s%s", exc, limit_advice(exc))
            if not self.ready.done():
                self.ready.set_result(notifier is not None and not self._stop.is_set())
            if notifier is not None and not self._stop.is_set():
                notifier = self._watch(notifier)
        finally:
            if notifier is not None:
                _close(notifier)
            if not self.ready.done():
                self.ready.set_result(False)
            self._stop.set()  # a tree that stopped by itself is not handed out again
            self._stop.close()
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                self.exited.set_result(None)

    def _prepare(self) -> object | None:
        roots: list[str] = []
        for given in self.spec.roots:
            resolved = os.path.realpath(given)
            if not os.path.isdir(resolved):
                log.warning("Not watching %s for changes: it is not a directory", given)
                continue
            roots.append(resolved)
        # A root inside another root is already covered.
        roots = [r for r in roots if not any(p in roots for p in parents(r))]
        roots = list(dict.fromkeys(roots))
        if not roots:
            log.warning("Not watching the workspace for changes: no root directory exists")
            return None
        self.roots = roots
        self._filter = WorkspaceFilter(roots, self.spec.ignore_dirs)
        if self.spec.use_gitignore:
            for root in roots:
                self._gits[root] = GitIgnores.open(root)
        if not self.spec.recursive:
            self._dirs, _ = self._walk(roots, collect_files=False)
        return self._notifier()

    def _direct(self) -> bool:
        return not self.spec.recursive and not self.spec.force_polling and inotify.available()

    def _notifier(self) -> object:
        if self._direct():
            return inotify.InotifyNotifier(sorted(self._dirs))
        from watchfiles._rust_notify import RustNotify

        spec = self.spec
        if spec.recursive:
            # notify walks the tree itself here; an unreadable directory must not stop it.
            return RustNotify(self.roots, False, spec.force_polling, spec.poll_delay_ms, True, True)
        # Errors are not ignored on this path: watchfiles would swallow a full inotify
        # budget along with permission errors and leave us watching half the tree.
        for attempt in range(3):
            try:
                return RustNotify(
                    sorted(self._dirs), False, spec.force_polling, spec.poll_delay_ms, False, False
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
            ignore_dirs=self.spec.ignore_dirs,
            known=len(self._dirs),
            limit=self.spec.max_dirs,
            collect_files=collect_files,
        )

    def _watch(self, notifier: object) -> object:
        failures = 0
        debounce_ms = self.spec.debounce_ms
        # A batch holds what happened since the previous one was taken (less a step of slack).
        since = time.monotonic()
        while not self._stop.is_set():
            try:
                raw = notifier.watch(debounce_ms, self._step_ms, 0, self._stop)  # type: ignore[attr-defined]
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
                    log.warning("Stopped watching the workspace for changes: %s%s", exc, limit_advice(exc))
                    break
                log.debug("Workspace watcher error, rebuilding: %s", exc)
                notifier = self._replace(notifier)[0]
        return notifier

    def _handle(self, raw: set[tuple[int, str]], notifier: object, since: float) -> object:
        batches = [raw]
        while batches:
            changes = self._decode(batches.pop())
            if not changes:
                continue
            if not self.spec.recursive:
                new_dirs = [
                    path
                    for path, kinds in changes.items()
                    if Change.added in kinds and path not in self._dirs and is_real_dir(path)
                ]
                if new_dirs:
                    notifier, leftover = self._replace(notifier, new_dirs, changes)
                    if leftover:
                        batches.append(leftover)
            batch = Batch(changes, since, self)
            for subscriber in self._subscribers:
                subscriber.take(batch)
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

        Our own inotify reader adds the watches to itself. watchfiles' is replaced: the
        new one starts before the old one is emptied and closed, so no event falls between
        them; what the old one still held comes back as `leftover`.
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
            if isinstance(notifier, inotify.InotifyNotifier):
                try:
                    notifier.add(sorted(added_dirs))
                except OSError as exc:
                    self._dirs = previous
                    log.warning("Could not extend the workspace watcher: %s%s", exc, limit_advice(exc))
                return notifier, None
        try:
            fresh = self._notifier()
        except Exception as exc:
            self._dirs = previous
            log.warning("Could not extend the workspace watcher: %s%s", exc, limit_advice(exc))
            return notifier, None
        try:
            leftover = notifier.watch(1, 1, 1, None)  # type: ignore[attr-defined]
        except Exception:
            leftover = None
        _close(notifier)
        return fresh, leftover if isinstance(leftover, set) else None


# -- sharing -------------------------------------------------------------------------

_trees: dict[TreeSpec, WatchedTree] = {}
_members: dict[TreeSpec, set[Subscriber]] = {}
_lock = threading.Lock()


def join(spec: TreeSpec, subscriber: Subscriber) -> WatchedTree:
    """The running tree for `spec`, with `subscriber` among those it hands batches to
    (started here when there is none, or the last one stopped by itself)."""
    with _lock:
        tree = _trees.get(spec)
        if tree is None or tree._stop.is_set():
            tree = WatchedTree(spec)
            try:
                tree._thread.start()
            except RuntimeError as exc:  # no thread to be had: watch nothing rather than fail the turn
                log.warning("Not watching the workspace for changes: %s", exc)
                tree._stop.set()
                tree.ready.set_result(False)
                tree.exited.set_result(None)
                tree._stop.close()
                return tree
            _trees[spec] = tree
            _members[spec] = set()
        _members[spec].add(subscriber)
        tree._subscribers = tuple(_members[spec])
        return tree


def leave(tree: WatchedTree, subscriber: Subscriber) -> bool:
    """`subscriber` no longer gets batches; True when it was the last (the tree stops)."""
    with _lock:
        members = _members.get(tree.spec) if _trees.get(tree.spec) is tree else None
        if members is None:  # the tree stopped by itself and was replaced, or left twice
            tree._subscribers = tuple(s for s in tree._subscribers if s is not subscriber)
            last = not tree._subscribers
        else:
            members.discard(subscriber)
            tree._subscribers = tuple(members)
            last = not members
            if last:
                del _trees[tree.spec], _members[tree.spec]
    if last:
        tree._stop.set()
    return last


def running_trees() -> int:
    """How many trees are watching now (for tests and benchmarks)."""
    with _lock:
        return sum(1 for tree in _trees.values() if not tree._stop.is_set())


def _close(notifier: object) -> None:
    with contextlib.suppress(Exception):
        notifier.close()  # type: ignore[attr-defined]


def limit_advice(exc: BaseException) -> str:
    if "watch limit" in str(exc) or "No space left" in str(exc):
        return " (raise fs.inotify.max_user_watches, or open a smaller folder)"
    return ""
