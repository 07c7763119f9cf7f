"""Your deny and ask `Edit(…)` rules that name files by a wildcard (`Edit(**/*.pem)`,
`Edit(src/*.rs)`), kept by the sandbox too.

Such a rule stopped `write_file` and `patch`, but in auto a sandboxed `echo x >> keys/a.pem`
or `sed -i … src/main.rs` wrote what it guards, unasked. `edit_guard` keeps the paths a
rule names whole read-only; here each file or folder a wildcard rule matches when a command
launches is bound read-only on its own, and `edit_guard` does the rest (a match the command
creates, or swaps in, is moved aside after it and the model told which rule). A read-only
bind mount point cannot be written, truncated, renamed over (`sed -i`, `mv`, `cp` onto it),
unlinked, nor hard-linked to another name (a link across mounts is refused), whatever the
command does.

Finding the matches must not cost a walk per launch: each root is walked once per process,
with an inotify watch on every folder a match could lie below (`PathGlob.advance`: only
`src/` for `src/*.rs`, every folder for `**/*.pem`), ignored and hidden folders and nested
repositories included (the rule is about paths, not git); later launches read what the
kernel reports (a name created or moved in) and `lstat` the matches they know. The matching
is permission_rules' own (`PathGlob`), on the path as written below the root: a link is
never followed, the file tools match where it leads too, and a link's target inside a root
is matched there itself.

Fails closed: where the kernel has no inotify, watches run out, or more paths match than
the sandbox mounts one by one (`MAX_GUARDED`), `unguardable` says why and every command
asks (plan mode refuses it). Not covered: what lies inside a `.git` folder (git's own files,
never walked) and `sandbox_writable` places outside the roots.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import struct
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hermes_core.changes import inotify
from hermes_core.fence.wildmatch import PathGlob
from hermes_core.sandbox import repo_finder
from hermes_core.sandbox.edit_guard import Guarded, Snapshot

MAX_GUARDED = 200  # read-only binds per launch for these rules: beyond, commands ask
MAX_WATCHES = 50_000  # per root, and within repo_finder's share of the system's
_CACHED = 100_000  # paths and folders whose matching is kept
_IN_ISDIR = 0x4000_0000
_MASK = inotify.IN_CREATE | inotify.IN_MOVED_TO | inotify.IN_DONT_FOLLOW | inotify.IN_EXCL_UNLINK
_EVENT = struct.Struct("iIII")


@dataclass(frozen=True, slots=True)
class Pattern:
    glob: PathGlob
    rule: str  # the rule and where it is written, for the model


class Globs:
    """A session's wildcard `Edit(…)` patterns over its roots."""

    def __init__(self, patterns: list[Pattern], roots: tuple[Path, ...], whole: Iterable[Path] = ()) -> None:
        self.patterns = patterns
        self.roots = roots
        self._whole = frozenset(whole)  # `edit_guard`'s paths: mounted already
        self._finders = [_Finder(str(root), self._matches, self._viable) for root in roots]
        self._known: set[Path] = set()
        self._rules: dict[str, str | None] = {}  # by path: a path's match never changes
        self._folders: dict[str, tuple[frozenset[int], ...]] = {}
        self._items: dict[tuple[str, bool], Guarded] = {}
        self._mounted: tuple[Guarded, ...] = ()

    def rule_for(self, path: str) -> str | None:
        """The rule whose pattern matches `path` (absolute, as written), or None."""
        rule = self._rules.get(path, "")
        if rule == "":
            folder, _, name = path.rpartition("/")
            rule = None
            for pattern, states in zip(self.patterns, self._states(folder), strict=True):
                if states and pattern.glob.accepts(pattern.glob.advance(name, states)):
                    rule = pattern.rule
                    break
            if len(self._rules) > _CACHED:
                self._rules.clear()
            self._rules[path] = rule
        return rule

    def _matches(self, path: str) -> bool:
        return self.rule_for(path) is not None

    def _viable(self, folder: str) -> bool:
        return any(self._states(folder))

    def _states(self, folder: str) -> tuple[frozenset[int], ...]:
        """Each pattern's positions after `folder/`: worked out once per folder, so a name
        in it costs its own length (a walk matches every name below the root)."""
        states = self._folders.get(folder)
        if states is None:
            if len(self._folders) > _CACHED:
                self._folders.clear()
            states = self._folders[folder] = tuple(p.glob.advance(folder + "/") for p in self.patterns)
        return states

    def guarded(self) -> tuple[Guarded, ...]:
        """What the patterns match now below the roots, outermost first (a matching folder
        stands for what it holds)."""
        found: list[Guarded] = []
        for finder in self._finders:
            for path, folder in finder.current()[0]:
                item = self._items.get((path, folder))
                if item is None:
                    rule = self.rule_for(path)
                    if rule is None or Path(path) in self._whole:
                        continue
                    if len(self._items) > _CACHED:
                        self._items.clear()
                    item = self._items[(path, folder)] = Guarded(Path(path), rule, folder)
                found.append(item)
        return found_outermost(found)

    def launch(self, *, first: bool) -> tuple[Guarded, ...]:
        """What the next command gets read-only (`MAX_GUARDED` at most: past that it asked,
        and you let it run). `first`: no command of the session runs, so what matches now is
        yours, not a command's."""
        now = self.guarded()
        if first:
            self._known = {item.path for item in now}
        self._mounted = now[:MAX_GUARDED]
        return self._mounted

    def to_check(self) -> tuple[Guarded, ...]:
        """What `edit_guard.undo` compares with the launch's snapshot: the matches mounted,
        and each match that was not there when the first running command launched (made by
        a command, or swapped in under a new name)."""
        new = [item for item in self.guarded() if item.path not in self._known]
        return found_outermost([*self._mounted, *new])

    def put_back(self, before: Snapshot) -> list[str]:
        """Put back each mounted match a command moved away with a folder above it (a mount
        point cannot be renamed, its folder can: after `mv src src.old`, `src.old/main.rs`
        matches no `Edit(src/*.rs)`); one sentence each. Found where it went by the
        snapshot's handle on it, and moved back only to where nothing is now, inside a root,
        through no link."""
        said = []
        for item in self._mounted:
            fd = before.held.get(item.path)
            moved = _where(fd) if fd is not None and not os.path.lexists(item.path) else None
            if moved is None or not any(moved.is_relative_to(root) for root in self.roots):
                continue
            missing = item.path  # the outermost name that is gone: what the command moved
            while not os.path.lexists(missing.parent):
                missing = missing.parent
            tail = item.path.relative_to(missing).parts
            if tail and moved.parts[-len(tail) :] != tail:
                continue  # renamed below too: left where it is
            source = Path(*moved.parts[: len(moved.parts) - len(tail)])
            if os.path.realpath(missing.parent) != str(missing.parent) or source in self.roots:
                continue
            try:
                os.rename(source, missing)
            except OSError:
                continue
            said.append(
                f"`{item.path}`, which your permission rule {item.rule} guards, was moved by a command "
                f"to `{moved}`: `{source}` was moved back to `{missing}`"
            )
        return said

    def unguardable(self) -> str | None:
        """Why the sandbox cannot keep these rules for the next command (so it asks), or None."""
        for root in self.roots:
            # `Edit(**/*.d)` in `conf.d`, `Edit(**)`: every file of the root (a name of one NUL
            # stands for any name: no file has it)
            candidates = (f"{root}/\0", *(str(p) for p in (root, *root.parents)))
            rule = next(filter(None, map(self.rule_for, candidates)), None)
            if rule is not None:
                return f"your permission rule {rule} covers all of `{root}`, which commands may write"
        count = 0
        for finder in self._finders:
            paths, complete = finder.current()
            if not complete:
                return (
                    f"the sandbox cannot list what your permission rules {self._rule_texts()} match below "
                    f"`{finder.root}` (no inotify here, or its watches ran out), so it cannot keep "
                    "those files read-only for a command"
                )
            count += len(paths)
        if count > MAX_GUARDED:
            return (
                f"{count} paths match your permission rules {self._rule_texts()}, more than the "
                f"{MAX_GUARDED} the sandbox keeps read-only one by one"
            )
        return None

    def outermost_match(self, path: Path) -> Path | None:
        """`path` or the outermost folder above it (below a root) that a pattern matches."""
        for root in self.roots:
            if path.is_relative_to(root) and path != root:
                for candidate in [*reversed(path.relative_to(root).parents[:-1]), path.relative_to(root)]:
                    if self._matches(str(root / candidate)):
                        return root / candidate
        return None

    def _rule_texts(self) -> str:
        return ", ".join(p.rule for p in self.patterns)


def found_outermost(found: Iterable[Guarded]) -> tuple[Guarded, ...]:
    found = list(found)
    if not any(item.folder for item in found):
        return tuple(dict.fromkeys(found))
    kept: list[Guarded] = []
    for item in sorted(found, key=lambda g: len(g.path.parts)):
        if not any(item.path.is_relative_to(k.path) for k in kept if k.folder):
            kept.append(item)
    return tuple(kept)


def for_rules(
    patterns: list[tuple[PathGlob, str]], roots: tuple[Path, ...], whole: Iterable[Guarded] = ()
) -> Globs | None:
    """A session's `Globs`, or None when it has no such rule (then nothing is paid per
    launch). `whole`: what `edit_guard` keeps already."""
    if not patterns:
        return None
    globs = Globs([Pattern(glob, rule) for glob, rule in patterns], roots, (g.path for g in whole))
    for finder in globs._finders:  # the one walk, in a thread: the first command waits only for its rest
        threading.Thread(target=finder.current, daemon=True, name="edit-globs").start()
    return globs


class _Finder:
    """One root's matches, kept current by the kernel's reports."""

    def __init__(self, root: str, matches: Callable[[str], bool], viable: Callable[[str], bool]) -> None:
        self.root = root
        self.matches = matches
        self.viable = viable
        self.lock = threading.Lock()
        self.paths: dict[int, str] = {}
        self.found: set[str] = set()
        self.partial = False
        self.stale = True
        self.fd = -1
        if inotify.available():
            self.fd = inotify._libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd >= 0:  # closed with the session's `Globs`
            weakref.finalize(self, _close, self.fd)

    def current(self) -> tuple[list[tuple[str, bool]], bool]:
        """(the matching paths there now and whether each is a folder, not following a
        link; whether the listing is complete)."""
        with self.lock:
            if self.fd < 0:
                return [], False
            self._drain()
            if self.stale:
                self.stale, self.partial = False, False
                self.found.clear()
                self._walk(self.root)
            there = []
            for path in sorted(self.found):
                try:
                    there.append((path, stat.S_ISDIR(os.lstat(path).st_mode)))
                except OSError:
                    self.found.discard(path)
            return there, not self.partial

    def _walk(self, top: str) -> None:
        """Watch `top` and every folder below where a match could lie (`.git` and links not
        entered, a matching folder not entered: it is mounted whole); the watch comes
        before the listing, so nothing made meanwhile is missed."""
        pending = [top] if self.viable(top) else []
        while pending:
            folder = pending.pop()
            if not self._watch(folder):
                self.partial = True
                return
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if self.matches(entry.path):
                        self.found.add(entry.path)
                    elif _enterable(entry) and self.viable(entry.path):
                        pending.append(entry.path)

    def _watch(self, folder: str) -> bool:
        if len(self.paths) >= min(MAX_WATCHES, repo_finder._budget()):
            return False
        wd = inotify._libc().inotify_add_watch(self.fd, os.fsencode(folder), _MASK)
        if wd < 0:
            return ctypes.get_errno() != errno.ENOSPC  # gone or no folder: nothing below to miss
        self.paths[wd] = folder
        return True

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                return
            except OSError:
                self.stale = True
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                name = os.fsdecode(data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0"))
                offset += _EVENT.size + length
                if mask & inotify.IN_Q_OVERFLOW:
                    self.stale = True
                    continue
                folder = self.paths.get(wd)
                if folder is None:
                    continue
                if mask & inotify.IN_IGNORED:
                    del self.paths[wd]
                    continue
                path = f"{folder}/{name}"
                if self.matches(path):
                    self.found.add(path)
                elif mask & _IN_ISDIR and name != ".git" and not self.stale:
                    self._walk(path)


def _where(fd: int) -> Path | None:
    """Where the file a handle holds is now (None: removed, or not to be read)."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return Path(where) if where.startswith("/") and not where.endswith(" (deleted)") else None


def _enterable(entry: os.DirEntry[str]) -> bool:
    return entry.name != ".git" and entry.is_dir(follow_symlinks=False)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
