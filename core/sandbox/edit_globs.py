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

A mount point's folder can still be renamed (`mv src src.old`: `src.old/main.rs` matches
no `Edit(src/*.rs)`, so a later command could write it): what a command moved away so is
put back after it (`put_back`).

Finding the matches must not cost a walk per launch: each root is walked once per process
(`glob_finder`), with an inotify watch on every folder a match could lie below
(`PathGlob.advance`: only `src/` for `src/*.rs`, every folder for `**/*.pem`), ignored and
hidden folders and nested repositories included (the rule is about paths, not git); later
launches read what the kernel reports (a name created or moved in) and `lstat` the matches
they know. The matching
is permission_rules' own (`PathGlob`), on the path as written below the root: a link is
never followed, the file tools match where it leads too, and a link's target inside a root
is matched there itself.

Fails closed: where the kernel has no inotify, watches run out, more paths match than the
sandbox mounts one by one (`MAX_GUARDED`), or a rule covers a whole root (`Edit(**)`),
`unguardable` says why and every command asks (plan mode refuses it). Not covered: what
lies inside a `.git` folder (git's own files, never walked) and `sandbox_writable` places
outside the roots.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hermes_core.fence.wildmatch import PathGlob
from hermes_core.sandbox.edit_guard import Guarded, Snapshot
from hermes_core.sandbox.glob_finder import Finder

# Read-only binds per launch for these rules: beyond, commands ask. bwrap reads the mount
# table for each bind: ~1 ms a match at 20, 1.2 at 100 (benchmarks/bench_edit_globs.py).
MAX_GUARDED = 100
_CACHED = 100_000  # paths and folders whose matching is kept


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
        self._finders = [Finder(str(root), self._matches, self._viable) for root in roots]
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
            inside = any(source.is_relative_to(root) and source != root for root in self.roots)
            if not inside or os.path.realpath(missing.parent) != str(missing.parent):
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


def _where(fd: int) -> Path | None:
    """Where the file a handle holds is now (None: removed, or not to be read)."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return Path(where) if where.startswith("/") and not where.endswith(" (deleted)") else None
