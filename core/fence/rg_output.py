"""What rg printed, made into what the model may see: a search's matches and a listing's
names, without secret files, in a worker thread.

rg's output is read up to 8 MB: some 400,000 lines. Parsed on the event loop, with each
line's text decoded and redacted (`git_credentials.redacted`, ~40 µs a line) and each listed
name's folder checked against the secret list (~40 µs a name), one `search "."` or
`list_files` of a tree a sandboxed command filled held the loop for 4-16 s: every session,
`session/cancel` and the exit waited. Now the work is done off the loop, a line's text is
decoded and redacted only when it is shown (a few hundred at most), and a folder is judged
once for all the names in it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hermes_core.fence.scope import WorkspaceError, WorkspaceScope
from hermes_core.sandbox.git_credentials import redacted

STDIN_NAME = "<stdin>"  # how rg names the file it read on its stdin


@dataclass(frozen=True, slots=True)
class Match:
    path: str  # relative to the workspace's cwd when inside it
    line: int
    raw: bytes  # the line as rg printed it; `text` is what the model may see of it

    @property
    def text(self) -> str:
        # Every line, not only a file named like git's config: a bare mirror's `x.git/config`,
        # or any file holding git's sections, carried a remote's token to the model (read_file
        # judges by content; a search cannot reread the file without a race). A URL keeps its
        # host and path, a `password = …` line says it was hidden: read_file shows code as is.
        return redacted(self.raw.decode("utf-8", errors="replace").strip())


def strip_dot_slash(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def listed_names(stdout: bytes, resolved: Path, scope: WorkspaceScope) -> list[str]:
    """`rg --files --null`'s names under `resolved`, sorted, those in secret folders left out
    (each folder judged once)."""
    secret_folder: dict[str, bool] = {}
    names: list[str] = []
    for raw in stdout.decode("utf-8", errors="replace").split("\0"):
        if not raw:
            continue
        name = strip_dot_slash(raw)
        folder = os.path.dirname(name)
        hidden = secret_folder.get(folder)
        if hidden is None:
            hidden = secret_folder[folder] = scope.is_secret((resolved / name).parent)
        if not hidden:
            names.append(name)
    names.sort()
    return names


def found_matches(
    stdout: bytes, scope: WorkspaceScope, *, prefix: str, stdin_name: str | None, allow_outside: bool
) -> tuple[list[Match], list[str]]:
    """Matches sorted by path and line, and rg's notes, without secret files (and without
    files that may be outside, unless `allow_outside`)."""
    matches, notes = _parse(stdout, prefix, stdin_name)
    matches, notes = _without_secret_files(matches, notes, scope)
    if not allow_outside:
        matches, notes = _without_outside_files(matches, notes, scope)
    return matches, notes


def _parse(stdout: bytes, prefix: str = "", stdin_name: str | None = None) -> tuple[list[Match], list[str]]:
    """Matches with their paths made relative to the workspace's cwd: `prefix` before each
    (rg ran in a subdirectory), `stdin_name` for the file rg read on its stdin."""
    matches: list[Match] = []
    notes: list[str] = []
    names: dict[bytes, str] = {}  # each file's name decoded once
    for raw in stdout.splitlines():
        path, sep, rest = raw.partition(b"\0")
        number, colon, text = rest.partition(b":")
        if not sep or not colon or not number.isdigit():
            notes.append(raw.decode("utf-8", errors="replace"))  # "binary file matches" and the like
            continue
        name = names.get(path)
        if name is None:
            name = strip_dot_slash(path.decode("utf-8", errors="replace"))
            name = stdin_name if stdin_name is not None and name == STDIN_NAME else prefix + name
            names[path] = name
        matches.append(Match(name, int(number), text))
    matches.sort(key=lambda m: (m.path, m.line))
    return matches, notes


def _without_secret_files(
    matches: list[Match], notes: list[str], scope: WorkspaceScope
) -> tuple[list[Match], list[str]]:
    """Matches and notes from secret files, should rg have read one past its globs (a home
    reached by another name), are dropped without a word: a note would tell the model
    whether the secret matched its pattern."""

    def secret(path: str) -> bool:
        named = Path(os.path.normpath(os.path.join(scope.cwd, path)))
        try:
            return scope.is_secret(named) or scope.is_secret(scope.absolute(path))
        except WorkspaceError:
            return True

    hidden = {path for path in {m.path for m in matches} if secret(path)}
    kept = [m for m in matches if m.path not in hidden]
    return kept, [note for note in notes if not secret(strip_dot_slash(note.partition("\0")[0]))]


def _without_outside_files(
    matches: list[Match], notes: list[str], scope: WorkspaceScope
) -> tuple[list[Match], list[str]]:
    """Matches in files the workspace rules count as outside (a hard link to a file
    elsewhere, say `~/.ssh/id_rsa`) are left out, with a note: their text is not the
    workspace's to show without asking."""
    outside: set[str] = set()
    for path in {m.path for m in matches}:
        try:
            if scope.outside(scope.absolute(path)):
                outside.add(path)
        except WorkspaceError:
            outside.add(path)
    if not outside:
        return matches, notes
    note = (
        f"[Left out matches in {len(outside)} file(s) with several hard links, which may be "
        f"files outside the workspace: {', '.join(sorted(outside)[:10])}. read_file asks the user first.]"
    )
    return [m for m in matches if m.path not in outside], [*notes, note]
