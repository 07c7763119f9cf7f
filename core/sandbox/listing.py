"""Folder listings the sandbox reads before every command (dotenv files in and above the
roots, ssh-agent folders in /tmp), kept while the folder's ctime says no entry was added,
removed or renamed: a stat instead of a scan of a large /tmp or home folder.

The change time, not the modification time: a command can set a folder's mtime back
(`touch -d`) after planting an entry, but any change, that one included, moves the ctime
to now. A listing is reused only when it was taken well after the folder's last change:
the kernel's clock ticks coarsely, so an entry made in the same tick as the scan would not
move it.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable

SETTLED_NS = 1_000_000_000
# A folder's last scan: (ctime, scanned at, every entry), for the folders inside a root
# (dotenv files and the folders to look into); `entries_starting` keeps its own, by name.
_scans: dict[str, tuple[int, int, list[tuple[str, bool]]]] = {}
_kept: dict[tuple[str, Callable[[str, bool], bool]], tuple[int, list[tuple[str, bool]]]] = {}


def entries(folder: str, keep: Callable[[str, bool], bool]) -> list[tuple[str, bool]]:
    """(name, is a directory, not following links) of the entries `keep` accepts."""
    try:
        ctime = os.stat(folder).st_ctime_ns
    except (OSError, ValueError):
        return []
    scan = _scans.get(folder)
    if scan is None or scan[0] != ctime or scan[1] - ctime <= SETTLED_NS:
        scanned_at = time.time_ns()
        try:
            with os.scandir(folder) as found:
                every = [(e.name, e.is_dir(follow_symlinks=False)) for e in found]
        except OSError:
            return []
        scan = _scans[folder] = (ctime, scanned_at, every)
    kept = _kept.get((folder, keep))
    if kept is None or kept[0] != scan[1]:
        kept = _kept[(folder, keep)] = (
            scan[1],
            [(name, is_dir) for name, is_dir in scan[2] if keep(name, is_dir)],
        )
    return kept[1]


def entries_starting(folder: str, prefix: str, keep: Callable[[str, bool], bool]) -> list[tuple[str, bool]]:
    """`entries`, for a filter that wants only names beginning with `prefix` (`.env`,
    `ssh-`): the names come from one `listdir` and only those that match are looked at, so
    a large and busy folder (a shared /tmp) costs little when it changes."""
    try:
        ctime = os.stat(folder).st_ctime_ns
    except (OSError, ValueError):
        return []
    key = (folder, prefix, keep)
    scan = _named.get(key)
    if scan is None or scan[0] != ctime or scan[1] - ctime <= SETTLED_NS:
        listed = _names.get(folder)
        if listed is None or listed[0] != ctime or listed[1] - ctime <= SETTLED_NS:
            scanned_at = time.time_ns()
            try:
                listed = _names[folder] = (ctime, scanned_at, os.listdir(folder))
            except OSError:
                return []
        scanned_at = listed[1]
        found = []
        for name in [name for name in listed[2] if name.startswith(prefix)]:
            try:
                is_dir = stat.S_ISDIR(os.lstat(os.path.join(folder, name)).st_mode)
            except OSError:  # gone meanwhile
                continue
            if keep(name, is_dir):
                found.append((name, is_dir))
        scan = _named[key] = (ctime, scanned_at, found)
    return scan[2]


_named: dict[tuple[str, str, Callable[[str, bool], bool]], tuple[int, int, list[tuple[str, bool]]]] = {}
# A folder's names at its last `listdir` (ctime, listed at, names): /tmp is read for ssh-agent
# folders and, above a root there, for dotenv files, from one listing.
_names: dict[str, tuple[int, int, list[str]]] = {}


def changed(folder: str) -> int | None:
    """The folder's change time (following links), or None when it is not there."""
    try:
        return os.stat(folder).st_ctime_ns
    except (OSError, ValueError):
        return None


def settled(stamps: tuple[int | None, ...], scanned_at: int) -> bool:
    """Whether a scan taken at `scanned_at` was well after every change in `stamps`."""
    return all(stamp is None or scanned_at - stamp > SETTLED_NS for stamp in stamps)


def _every(name: str, is_dir: bool) -> bool:
    return True


_name_sets: dict[str, tuple[list[tuple[str, bool]], frozenset[str]]] = {}


def absent_in(folder: str) -> Callable[[str], bool]:
    """A test of names relative to `folder` (`.zed`, `.config/mise`): True where nothing
    by that name is there (no link followed). The first part is looked up in the folder's
    listing (`entries`: one stat while no entry was added, removed or renamed, instead of
    one per name: a root is checked for some sixty names before every command); a longer
    name whose first part is there is looked at on the disk."""
    every = entries(folder, _every)
    cached = _name_sets.get(folder)
    if cached is None or cached[0] is not every:
        cached = _name_sets[folder] = (every, frozenset(name for name, _ in every))
    listed = cached[1]
    readable = bool(listed)  # an empty or unreadable folder: each name looked at on the disk

    def is_absent(name: str) -> bool:
        first, sep, _ = name.partition("/")
        if readable and first not in listed:
            return True
        if readable and not sep:
            return False
        return not os.path.lexists(os.path.join(folder, name))

    return is_absent


def listed_absent_in(folder: str) -> Callable[[str], bool] | None:
    """`absent_in(folder)` when its last listing still holds (no entry added, removed or
    renamed since, and taken well after the last change): a lookup instead of a stat per
    name. None otherwise: the caller looks at its few names on the disk rather than
    have a large folder listed again for them."""
    try:
        ctime = os.stat(folder).st_ctime_ns
    except (OSError, ValueError):
        return None
    scan = _scans.get(folder)
    if scan is None or scan[0] != ctime or scan[1] - ctime <= SETTLED_NS:
        return None
    return absent_in(folder)
