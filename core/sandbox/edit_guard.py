"""Your deny and ask `Edit(…)` rules, kept by the sandbox too.

A rule `deny = ["Edit(secrets/**)"]` stopped `write_file`, but a sandboxed
`sh -c 'echo x > secrets/a'` wrote there, unasked in auto. Each path such a rule names
whole (a folder, `dir/**` or `dir/`, or one file with no wildcard) is mounted read-only in
every sandboxed command, like the editor's folders: the write fails with "Read-only file
system" and the model is told to use `write_file`, where the rule applies (an ask rule
asks). A folder missing when the session's first command starts is made, empty, so it
can be mounted (removed with the session if still empty); a file that is missing cannot be
mounted without making it, so one a command creates is moved aside after it. A path
swapped while a command runs (its folder renamed away and made again) is moved aside too.
A pattern naming files by a wildcard (`Edit(**/*.pem)`) guards the file tools alone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import weakref
from dataclasses import dataclass
from pathlib import Path

Identity = tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class Guarded:
    path: Path
    rule: str  # the rule and where it is written, for the model
    folder: bool


def guarded_inside(paths: list[tuple[Path, str, bool]], roots: tuple[Path, ...]) -> tuple[Guarded, ...]:
    """The rules' paths inside a root (and not a root itself): elsewhere a command writes
    nothing anyway, and what changes there is not a command's to move aside."""
    return tuple(
        Guarded(path, rule, folder)
        for path, rule, folder in paths
        if any(path.is_relative_to(root) and path != root for root in roots)
    )


def make_missing_folders(guarded: tuple[Guarded, ...], roots: tuple[Path, ...]) -> list[Path]:
    """Make each guarded folder inside a root that is missing where its parent exists (to
    mount it read-only); the folders made. Nothing is made outside the roots: there the
    sandbox writes nothing anyway."""
    made = []
    for item in guarded:
        inside = any(item.path.is_relative_to(root) for root in roots)
        if item.folder and inside and not os.path.lexists(item.path) and item.path.parent.is_dir():
            try:
                item.path.mkdir()
            except OSError:
                continue
            made.append(item.path)
    return made


def read_only(guarded: tuple[Guarded, ...]) -> list[Path]:
    """What the next command mounts read-only: each guarded path there now (a link: where
    it leads, if anywhere; the link itself, swapped, is moved aside by `undo`)."""
    paths = []
    for item in guarded:
        if os.path.islink(item.path):
            try:
                paths.append(item.path.resolve(strict=True))
            except (OSError, RuntimeError):
                continue
        elif os.path.lexists(item.path):
            paths.append(item.path)
    return paths


class Snapshot(dict[Path, Identity]):
    """Each guarded path's identity when a command launched, the path held open meanwhile:
    a link removed and a folder made in its place could otherwise get the freed inode's
    number, and pass for what was there."""

    def __init__(self, guarded: tuple[Guarded, ...]) -> None:
        super().__init__()
        self._held: list[int] = []
        self.held: dict[Path, int] = {}  # each path's, to find where a command moved it
        weakref.finalize(self, _close_all, self._held)  # a session that ends with it open
        for item in guarded:
            self.note(item.path)

    def note(self, path: Path) -> None:
        self[path] = _identity(path)
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            self._held.append(fd)
            self.held[path] = fd

    def close(self) -> None:
        self.held.clear()
        _close_all(self._held)


def _close_all(held: list[int]) -> None:
    for fd in held:
        with contextlib.suppress(OSError):
            os.close(fd)
    held.clear()


def identities(guarded: tuple[Guarded, ...]) -> Snapshot:
    """What `undo` compares with: taken when a command launches (`close` it after)."""
    return Snapshot(guarded)


def accept(before: Snapshot, path: Path) -> None:
    """The file tools wrote `path` (the rule allowed it, or you did): not a command's."""
    for guarded in list(before):
        if path == guarded or guarded in path.parents:
            before.note(guarded)


def undo(guarded: tuple[Guarded, ...], before: Snapshot) -> list[str]:
    """Move aside each guarded path a command created or replaced since `before`; one
    sentence for each."""
    said = []
    for item in guarded:
        now = _identity(item.path)
        if now is None or now == before.get(item.path):
            continue
        aside = item.path.with_name(f"{item.path.name}.refused-{secrets.token_hex(6)}")
        try:
            os.rename(item.path, aside)
        except OSError:
            continue
        before[item.path] = None
        said.append(
            f"`{item.path}` was written by a command, but your permission rule {item.rule} guards it: "
            f"moved to `{aside}`; write it with write_file, which applies the rule"
        )
    return said


def explain(output: str, guarded: tuple[Guarded, ...], roots: tuple[Path, ...]) -> str | None:
    """Why a command failed, when it wrote a guarded path; None otherwise."""
    for line in output.splitlines():
        # a write; a rename over, or removal of, a mount point; a hard link to one
        if not any(error in line for error in _REFUSALS):
            continue
        for item in guarded:
            spellings = [str(item.path)]
            spellings += [str(item.path.relative_to(r)) for r in roots if item.path.is_relative_to(r)]
            if any(s and s != "." and s in line for s in spellings):
                return (
                    f"it tried to change `{item.path}`, which your permission rule {item.rule} guards: "
                    "the sandbox keeps it read-only; write it with write_file, which applies the rule "
                    f"({line.strip()[:200]})"
                )
    return None


_REFUSALS = ("Read-only file system", "Device or resource busy", "Invalid cross-device link")


def _identity(path: Path) -> Identity:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
