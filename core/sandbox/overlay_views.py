"""Which read-only folders a launch may show through a read-only overlay instead of a
read-only bind: the same content, read-only, at a lower price.

bwrap 0.11 reads and parses the whole `/proc/self/mountinfo` for every bind, and that
grows with every mount the host has (README, "Benchmarks": 100 more host mounts made each
bind several times dearer), while an overlay mounts without reading it. A read-only
overlay of the folder under one empty layer of ours shows the folder's own entries, and
nothing can be written through it.

Only where overlayfs takes the folder as a lower layer for sure: a local file system of
the kinds below, found by the folder's device in the mount table. Anything else (FUSE,
network mounts, an unknown device) keeps the bind. Only for folders nothing is mounted
inside on the host (the overlay would not show such a mount): git's `hooks` and `info`
and the editors' folders are plain folders.

A bind is `nodev`; bwrap mounts an overlay without that flag. A regular user's overlay is
mounted in bwrap's user namespace, where the kernel ignores device files all the same. Run
as root there is no user namespace, and a device file in the folder (a root-extracted
archive can hold `.vscode/disk`, a block device) would open the disk from inside: so as
root only a small folder holding nothing but folders, regular files and links, looked
at before each launch, is a view (only root can make a device file, and none can inside).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_ROOT = os.geteuid() == 0
_ROOT_SCAN_LIMIT = 256  # entries; a larger folder keeps its bind
# Local file systems overlayfs accepts as a lower layer.
_LOWER_OK = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs"})

_devices: dict[int, str] = {}  # st_dev: its file system's type
_points: tuple[str, ...] = ()  # every mount point, ending in "/"


def viewable(path: Path) -> bool:
    """Whether `path` is a real folder (not a link) on a file system overlayfs takes as
    a lower layer, with nothing mounted inside it."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(status.st_mode):  # (lstat: a link is not)
        return False
    kind = _devices.get(status.st_dev)
    if kind is None:
        _read_mount_table()
        kind = _devices.get(status.st_dev)
    text = str(path).rstrip("/") + "/"
    if kind not in _LOWER_OK or any(point.startswith(text) for point in _points):
        return False
    return not _ROOT or _plain(text)


def _plain(folder: str) -> bool:
    """Whether `folder` holds only folders, regular files and links (no device file,
    FIFO or socket), `_ROOT_SCAN_LIMIT` entries at most."""
    pending, seen = [folder], 0
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > _ROOT_SCAN_LIMIT:
                        return False
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif not (entry.is_file(follow_symlinks=False) or entry.is_symlink()):
                        return False
        except OSError:
            return False
    return True


def _read_mount_table() -> None:
    """The mount table, read again only when a folder's device is not in it yet."""
    global _points
    points: list[str] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        major, _, minor = fields[2].partition(":")
        point = fields[4].replace("\\040", " ")
        points.append(point.rstrip("/") + "/")
        try:
            _devices[os.makedev(int(major), int(minor))] = line.split(" - ", 1)[1].split()[0]
        except (ValueError, IndexError):
            continue
    _points = tuple(points)
