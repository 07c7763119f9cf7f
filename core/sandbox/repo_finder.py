"""Every repository below a root, at any depth and in dependency folders too, kept current by
the kernel (inotify) instead of a walk of the tree before and after each command; and the
same for the editor folders read at any depth (`NESTED_EDITORS`).

A `.git` planted anywhere below a root runs later, outside the sandbox: git finds a
repository upward from the working directory (a shell prompt's `git status` in any folder
below), Zed scans its whole worktree for repositories, and VS Code opens the repository of
any file you open (go to definition lands in `node_modules/pkg/lib/x.js`). Walking every
folder costs a stat each (~5 µs: 90 ms for a 16,000-folder `node_modules`), twice per
command. So each root is walked once per process, with a watch on every folder; later
checks read only what the kernel reports: a `.git` created or moved in anywhere, and new
folders (watched first, then walked, so what was made before the watch is seen too).

Fails towards walking: when the kernel dropped events (its queue overflowed) the next check
walks the root again. Where watches run out (`MAX_WATCHES`, or the system's
a quarter of `fs.inotify.max_user_watches`: a root that holds a home folder) or inotify is missing, the
check is the bounded walk it was before (`BOUNDED_DEPTH` folders down, dependency folders not
entered) on top of what the watches found.

Zed reads `.zed/settings.json` at every level of a worktree ("folder-specific settings …
can be defined at multiple levels", its configuring-zed docs), and a folder's `languages.*.
formatter.external.command` runs when you save a file there; Helix takes the nearest folder
with a `.helix` (or `.git`) above where it starts for the workspace whose `languages.toml`
names the language servers it starts. VS Code reads `.vscode/` only at a workspace folder's
root, which the sandbox keeps read-only already.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import re
import threading

from hermes_core.changes import inotify
from hermes_core.sandbox import listing

log = logging.getLogger(__name__)

MAX_WATCHES = 100_000  # for all roots of this process together, and a quarter of the system's at most
# Roots kept watched: each is an inotify instance (128 per user by default, which the
# workspace watcher and the user's editor need too); the least recently checked goes first,
# and is walked again when it is checked next.
MAX_ROOTS = 8
BOUNDED_DEPTH = 3
BOUNDED_SKIP = frozenset(
    {".git", "node_modules", ".venv", "venv", "target", "build", "dist", "__pycache__", ".tox", ".mypy_cache"}
)
_IN_ISDIR = 0x4000_0000
_MASK = (
    inotify.IN_CREATE
    | inotify.IN_MOVED_TO
    | inotify.IN_ONLYDIR
    | inotify.IN_DONT_FOLLOW
    | inotify.IN_EXCL_UNLINK
)
NESTED_EDITORS = (".zed", ".helix")
_NAMES = frozenset({".git", "HEAD", *NESTED_EDITORS})  # `HEAD`: a bare repository's
# mise reads the config files of the folder you are in and of every folder above it (its
# configuration docs: "hierarchical"), and once it is activated in your shell it runs a
# config's `[hooks]` and `env._.source` at every `cd`: `mise.toml`, `.mise.toml`, their
# `.local` and per-environment (`mise.<env>.toml`) variants, and the folders `mise/`,
# `.mise/` (`config.toml`) and `.config/mise/` (found as `mise` in `.config`), at any depth.
_RUN_LATER = re.compile(r"\.?mise(?:\.[^/]*)?\.toml|\.?mise")


def run_later_name(name: str) -> bool:
    """Whether an entry of this name below a root is a config another tool runs later."""
    return _RUN_LATER.fullmatch(name) is not None


def _tracked(name: str) -> bool:
    return name in _NAMES or _RUN_LATER.fullmatch(name) is not None


_watches_used = 0
_finders: dict[str, _Finder] = {}  # in order of use, the most recent last
_finders_lock = threading.Lock()
_budget_lock = threading.Lock()


def repositories(root: str) -> list[str]:
    """The folders below `root` (not `root` itself) that hold a `.git` of any kind: a folder,
    a `gitdir:` file or a link."""
    return holding(root, ".git")


def holding(root: str, name: str) -> list[str]:
    """The folders below `root` (not `root` itself) holding an entry `name` (`.git`, `HEAD`
    or one of `NESTED_EDITORS`), of any kind."""
    return _finder(root).current(name)


def run_later_below(root: str) -> list[str]:
    """The run-later configs below `root` (`sub/mise.toml`, `sub/.config/mise`), as paths."""
    return _finder(root).run_later()


def prepare(roots: tuple[str, ...]) -> None:
    """Walk these roots now, in a thread, so that the first command does not wait for the
    walk (it waits only for what is left of it)."""
    for root in roots:
        finder = _finder(root)
        threading.Thread(target=finder.current, args=(".git",), daemon=True, name="repo-finder").start()


def _finder(root: str) -> _Finder:
    with _finders_lock:
        finder = _finders.pop(root, None)
        if finder is None:
            finder = _Finder(root)
        _finders[root] = finder
        while len(_finders) > MAX_ROOTS:
            oldest = next(iter(_finders))
            _finders.pop(oldest).close()
    return finder


class _Finder:
    def __init__(self, root: str) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.paths: dict[int, str] = {}
        self.found: dict[str, set[str]] = {name: set() for name in _NAMES}  # run-later names added
        self.partial = False  # some folder has no watch: the bounded walk adds its view
        self.stale = True  # the next check walks the whole root
        self.fd = -1
        self.closed = False
        self._open()

    def _open(self) -> None:
        if inotify.available():
            self.fd = inotify._libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            log.warning(
                "sandbox: no inotify for %s: nested repositories are looked for %d folders down",
                self.root,
                BOUNDED_DEPTH,
            )

    def current(self, name: str) -> list[str]:
        with self.lock:
            self._refresh()
            self.found[name] = {f for f in self.found.get(name, ()) if os.path.lexists(f"{f}/{name}")}
            found = set(self.found[name])
        if self.fd < 0 or self.partial:
            found.update(bounded_walk(self.root, name))
        return sorted(found)

    def run_later(self) -> list[str]:
        with self.lock:
            self._refresh()
            paths: set[str] = set()
            for name in [n for n in self.found if run_later_name(n)]:
                self.found[name] = {f for f in self.found[name] if os.path.lexists(f"{f}/{name}")}
                paths.update(f"{f}/{name}" for f in self.found[name])
        if self.fd < 0 or self.partial:
            paths.update(bounded_walk_paths(self.root))
        return sorted(paths)

    def _refresh(self) -> None:
        if self.closed:  # evicted meanwhile (`MAX_ROOTS`): watched again, from a walk
            self.closed = False
            self._open()
        if self.fd >= 0:
            self._drain()
            if self.stale:
                self.stale = False
                for folders in self.found.values():
                    folders.clear()
                self.partial = False
                self._walk(self.root)

    def close(self) -> None:
        global _watches_used
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
                with _budget_lock:
                    _watches_used -= len(self.paths)
                self.paths.clear()
                self.stale = True
                self.closed = True

    def _walk(self, top: str) -> None:
        """Watch `top` and every folder below it (`.git` not entered, links not followed),
        noting each `.git`; the watch comes before the listing, so nothing is missed between."""
        pending = [top]
        while pending:
            folder = pending.pop()
            if not self._watch(folder):
                self.partial = True
                return
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if _tracked(entry.name) and folder != self.root:
                        self.found.setdefault(entry.name, set()).add(folder)
                    # A run-later folder (`mise/`) may hold a repository: entered too.
                    if entry.name not in _NAMES and entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)

    def _watch(self, folder: str) -> bool:
        global _watches_used
        if _watches_used >= _budget():
            return False
        wd = inotify._libc().inotify_add_watch(self.fd, os.fsencode(folder), _MASK)
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                log.warning("sandbox: inotify watches ran out below %s", self.root)
                return False
            return True  # gone or no longer a folder: nothing to watch, nothing below
        if wd not in self.paths:
            with _budget_lock:
                _watches_used += 1
        self.paths[wd] = folder  # a folder moved inside keeps its watch: its new name
        return True

    def _drain(self) -> None:
        global _watches_used
        for wd, mask, name in inotify.events(self.fd):
            if mask & inotify.IN_Q_OVERFLOW:
                self.stale = True
                continue
            folder = self.paths.get(wd)
            if folder is None:
                continue
            if mask & inotify.IN_IGNORED:
                del self.paths[wd]
                with _budget_lock:
                    _watches_used -= 1
                continue
            if _tracked(name) and folder != self.root:
                self.found.setdefault(name, set()).add(folder)
            if name not in _NAMES and mask & _IN_ISDIR and not self.stale:
                self._walk(f"{folder}/{name}")


def _budget() -> int:
    """`MAX_WATCHES`, or a quarter of what the system lets this user have: the user's
    editor, our workspace watcher and the agent processes of other threads (each with a
    budget of its own) need theirs, and an editor refused a watch stops seeing changes."""
    global _system_share
    if _system_share is None:
        try:
            with open("/proc/sys/fs/inotify/max_user_watches") as limit:
                _system_share = int(limit.read()) // 4
        except (OSError, ValueError):
            _system_share = 8192 // 4  # the kernel's old default
    return min(MAX_WATCHES, _system_share)


_system_share: int | None = None


def _bounded_entry(name: str, is_dir: bool) -> bool:
    return name in _NAMES or (is_dir and name not in BOUNDED_SKIP)


def _run_later_or_entered(name: str, is_dir: bool) -> bool:
    return run_later_name(name) or _bounded_entry(name, is_dir)


def bounded_walk_paths(root: str) -> list[str]:
    """The run-later configs `BOUNDED_DEPTH` folders down (not in `root` itself),
    `BOUNDED_SKIP` not entered, as paths: what is looked at where watches are not to be had."""
    found: list[str] = []
    level = [root]
    for depth in range(BOUNDED_DEPTH + 1):
        below: list[str] = []
        for folder in level:
            for name, is_dir in listing.entries(folder, _run_later_or_entered):
                if run_later_name(name) and depth > 0:
                    found.append(f"{folder}/{name}")
                if is_dir and name not in _NAMES and name not in BOUNDED_SKIP and depth < BOUNDED_DEPTH:
                    below.append(f"{folder}/{name}")
        level = below
    return found


def bounded_walk(root: str, wanted: str = ".git") -> list[str]:
    """The folders holding `wanted`, `BOUNDED_DEPTH` folders down, `BOUNDED_SKIP` not
    entered: what is looked at where watches are not to be had."""
    found: list[str] = []
    level = [root]
    for depth in range(BOUNDED_DEPTH + 1):
        below: list[str] = []
        for folder in level:
            for name, _ in listing.entries(folder, _bounded_entry):
                if name == wanted:
                    if depth > 0:
                        found.append(folder)
                elif name not in _NAMES and depth < BOUNDED_DEPTH:
                    below.append(f"{folder}/{name}")
        level = below
    return found
