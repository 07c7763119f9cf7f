"""Files only the user may read: the agent's home, its session store and the logs it is told
to write. Each holds the conversations (what the user pasted, every file and command output
the model read) and the home holds the config's keys; created with the process's umask
(0755 folders, 0644 files) they were readable by every other account on the machine.

What exists already is tightened only when it is the user's own: a folder another account
made (a shared `HERMES_ACP_HOME`) is left as it is."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: Path) -> Path:
    """`path` made (its missing parents too, as the umask says) or tightened to 0700."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, FOLDER_MODE)
    _tighten(path)
    return path


def private_file(path: Path) -> Path:
    """`path` created empty as 0600 where missing (never truncated), else tightened to 0600;
    its folder private too."""
    path = Path(path)
    private_folder(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except IsADirectoryError:
        return path  # no file to keep private: its user (SQLite) reports that in its own words
    try:
        _tighten_fd(fd)
    finally:
        os.close(fd)
    return path


def tighten_existing(path: Path) -> None:
    """`path` (a file beside a private one: SQLite's `-wal` and `-shm`) made 0600 when it
    exists and is the user's own."""
    with contextlib.suppress(FileNotFoundError):
        _tighten(path, os.O_NONBLOCK)


def _tighten(path: Path, flags: int = os.O_DIRECTORY) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags)
    try:
        _tighten_fd(fd)
    finally:
        os.close(fd)


def _tighten_fd(fd: int) -> None:
    """Group and others lose every bit; the owner's stay as they are. Not a folder others
    share by design (the sticky bit: `HERMES_ACP_HOME=/tmp`) or the user's home itself
    (`HERMES_ACP_HOME=~`): closing those would break other programs, and the files in them
    are private already."""
    info = os.fstat(fd)
    if info.st_mode & stat.S_ISVTX or _is_home(info):
        return
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~0o077)


def _is_home(info: os.stat_result) -> bool:
    try:
        home = os.stat(Path.home())
    except (OSError, RuntimeError):
        return False
    return (home.st_dev, home.st_ino) == (info.st_dev, info.st_ino)
