"""What a repository's .gitignore files exclude, read the way git reads them, without
running git.

Why not ask git (`git check-ignore`, `git ls-files --ignored`)? Git runs code the
repository's own config names (`core.fsmonitor`, hooks, filters), and that config is the
workspace's: anything the model or a sandboxed command wrote there would run outside the
sandbox, with the agent's keys. Reading the ignore files is all the watcher needs, and
`hermes_core.fence.wildmatch` matches git's pattern language in linear time (the patterns
are the workspace's too: a backtracking regex per pattern let one line freeze the server).

Precedence, as git has it (gitignore(5)): a deeper .gitignore beats a shallower one, which
beats `.git/info/exclude`, which beats the user's global excludes file; within one file
the last matching pattern wins; nothing below an excluded directory can be re-included.
Tracked files are never ignored (the index says which). A file that cannot be read counts
as empty: reporting too much beats breaking the turn.
"""

from __future__ import annotations

import configparser
import logging
import os
import stat
import struct
from pathlib import Path

from hermes_core.fence.wildmatch import IgnorePattern, parse_line

log = logging.getLogger(__name__)

MAX_IGNORE_FILE_BYTES = 1_000_000  # a larger ignore file is not the user's; it counts as empty
MAX_INDEX_BYTES = 256_000_000


class Repository:
    """The ignore rules and tracked paths of the work tree whose top is `top`."""

    def __init__(self, top: str, git_dir: str, common_dir: str) -> None:
        self.top = top
        self.git_dir = git_dir
        self.common_dir = common_dir
        self._base = [
            _FileSpec(path)
            for path in (_global_excludes_file(), os.path.join(common_dir, "info", "exclude"))
            if path is not None
        ]
        self._specs: dict[str, _FileSpec] = {}
        self._index = _Index(os.path.join(git_dir, "index"))

    @classmethod
    def around(cls, path: str) -> Repository | None:
        """The repository whose work tree holds `path`, if any (as `git rev-parse` finds it:
        the nearest `.git` directory or `gitdir:` file at or above it)."""
        for directory in (path, *(str(p) for p in Path(path).parents)):
            dot_git = os.path.join(directory, ".git")
            if os.path.isdir(dot_git):
                return cls(directory, dot_git, _common_dir(dot_git))
            if os.path.isfile(dot_git):
                git_dir = _linked_git_dir(dot_git)
                if git_dir is None:
                    return None
                return cls(directory, git_dir, _common_dir(git_dir))
        return None

    def ignored(self, path: str, *, is_dir: bool, parents_checked: bool = False) -> bool:
        """Whether .gitignore excludes `path` (absolute, inside the work tree). With
        `parents_checked`, the caller already knows no directory above it is excluded."""
        rel = os.path.relpath(path, self.top)
        if rel == "." or rel.startswith(".."):
            return False
        parts = rel.split(os.sep)
        if parts[0] == ".git":
            return False  # not git's to ignore; the watcher's own list skips it
        if not is_dir and self._index.tracks(rel.replace(os.sep, "/")):
            return False
        if not parents_checked:
            for depth in range(1, len(parts)):
                if self._excluded(parts[:depth], is_dir=True):
                    return not self._index.tracks_below("/".join(parts[:depth]))
        excluded = self._excluded(parts, is_dir=is_dir)
        if excluded and is_dir:
            return not self._index.tracks_below("/".join(parts))
        return excluded

    def _excluded(self, parts: list[str], *, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        verdict: bool | None = None
        whole = "/".join(parts) + suffix
        for base in self._base:
            verdict = _overrule(verdict, base.check(whole))
        for depth in range(len(parts)):
            directory = os.path.join(self.top, *parts[:depth])
            spec = self._specs.get(directory)
            if spec is None:
                spec = self._specs[directory] = _FileSpec(os.path.join(directory, ".gitignore"))
            verdict = _overrule(verdict, spec.check("/".join(parts[depth:]) + suffix))
        return bool(verdict)


def _overrule(verdict: bool | None, match: bool | None) -> bool | None:
    return verdict if match is None else match


class _FileSpec:
    """One ignore file's patterns, read again when the file changes."""

    __slots__ = ("_path", "_spec", "_stamp")

    def __init__(self, path: str) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._spec: list[IgnorePattern] | None = None

    def check(self, relative: str) -> bool | None:
        """True: a pattern excludes it; False: a `!pattern` re-includes it; None: no match.
        A folder's path ends with '/'. The last pattern that matches decides."""
        spec = self._current()
        if spec is None:
            return None
        is_dir = relative.endswith("/")
        path = relative.rstrip("/")
        for pattern in reversed(spec):
            if pattern.matches(path, is_dir=is_dir):
                return not pattern.negated
        return None

    def _current(self) -> list[IgnorePattern] | None:
        try:
            found = os.stat(self._path)
        except OSError:
            self._stamp, self._spec = None, None
            return None
        stamp = (found.st_mtime_ns, found.st_size)
        if stamp != self._stamp:
            self._stamp, self._spec = stamp, _read_spec(self._path, found.st_size)
        return self._spec


def _read_spec(path: str, size: int) -> list[IgnorePattern] | None:
    if size > MAX_IGNORE_FILE_BYTES:
        return None
    data = read_regular(path, MAX_IGNORE_FILE_BYTES)
    if data is None:
        return None
    lines = data.decode("utf-8", "surrogateescape").splitlines()
    patterns = [pattern for pattern in map(parse_line, lines) if pattern is not None]
    return patterns or None


def read_regular(path: str, limit: int) -> bytes | None:
    """A regular file's first `limit` bytes; None for anything else. The workspace names
    these files: a FIFO must not block the watcher, nor /dev/zero fill its memory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


class _Index:
    """The paths git tracks, read from the index file (versions 2 to 4) when it changes."""

    __slots__ = ("_dirs", "_path", "_paths", "_stamp")

    def __init__(self, path: str) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._paths: frozenset[str] = frozenset()
        self._dirs: frozenset[str] = frozenset()

    def tracks(self, path: str) -> bool:
        self._refresh()
        return path in self._paths

    def tracks_below(self, directory: str) -> bool:
        self._refresh()
        return directory in self._dirs

    def _refresh(self) -> None:
        try:
            found = os.stat(self._path)
        except OSError:
            self._stamp, self._paths, self._dirs = None, frozenset(), frozenset()
            return
        stamp = (found.st_mtime_ns, found.st_size)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        paths: list[str] = []
        data = read_regular(self._path, MAX_INDEX_BYTES) if found.st_size <= MAX_INDEX_BYTES else None
        if data is not None:
            try:
                paths = index_paths(data)
            except (ValueError, struct.error, IndexError) as exc:
                log.debug("git index %s not read: %s", self._path, exc)
        self._paths = frozenset(paths)
        dirs: set[str] = set()
        for path in paths:
            parent = path.rpartition("/")[0]
            while parent and parent not in dirs:
                dirs.add(parent)
                parent = parent.rpartition("/")[0]
        self._dirs = frozenset(dirs)


_ENTRY_FIXED = 62  # ctime, mtime, dev, ino, mode, uid, gid, size (4 bytes each but the
# two times, 8), the object id (20), flags (2): index-format.txt, SHA-1 repositories


def index_paths(data: bytes) -> list[str]:
    """The paths a git index lists. ValueError for what is not an index we can read
    (a SHA-256 repository's index reads as garbage and fails the same way)."""
    signature, version, count = struct.unpack_from(">4sII", data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        raise ValueError(f"not a git index of a known version ({signature!r}, {version})")
    offset = 12
    paths: list[str] = []
    previous = b""
    for _ in range(count):
        entry = offset
        flags = struct.unpack_from(">H", data, entry + _ENTRY_FIXED - 2)[0]
        offset = entry + _ENTRY_FIXED + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:
            strip, offset = _varint(data, offset)
            end = data.index(b"\0", offset)
            name = previous[: len(previous) - strip] + data[offset:end]
            offset = end + 1
        else:
            end = data.index(b"\0", offset)
            name = data[offset:end]
            # 1 to 8 NULs pad the entry to a multiple of 8 bytes (read-cache.c, ondisk_ce_size).
            offset = entry + ((offset - entry + len(name) + 8) & ~7)
        previous = name
        paths.append(name.decode("utf-8", "surrogateescape"))
    return paths


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """git's offset varint (varint.c): 7 bits a byte, each continuation adding one."""
    byte = data[offset]
    offset += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[offset]
        offset += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, offset


def _linked_git_dir(dot_git_file: str) -> str | None:
    """Where a `.git` file (a linked worktree, a submodule) points."""
    data = read_regular(dot_git_file, 4096)
    if data is None:
        return None
    first = data.decode("utf-8", "surrogateescape").partition("\n")[0].strip()
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git_file), target))


def _common_dir(git_dir: str) -> str:
    """A linked worktree's shared repository (where info/exclude lives)."""
    data = read_regular(os.path.join(git_dir, "commondir"), 4096)
    if data is None:
        return git_dir
    common = data.decode("utf-8", "surrogateescape").partition("\n")[0].strip()
    return os.path.normpath(os.path.join(git_dir, common)) if common else git_dir


def _global_excludes_file() -> str | None:
    """The user's global excludes file: `core.excludesFile` from the user's own git config
    (never the repository's), else git's default `$XDG_CONFIG_HOME/git/ignore`."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for config in (os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")):
        value = _core_excludes_file(config)
        if value:
            return os.path.expanduser(value)
    return os.path.join(xdg, "git", "ignore")


def _core_excludes_file(config_path: str) -> str | None:
    # Read like the other files: a home folder can be the workspace, and a FIFO there must
    # not block the watcher.
    data = read_regular(config_path, MAX_IGNORE_FILE_BYTES)
    if data is None:
        return None
    parser = configparser.ConfigParser(strict=False, interpolation=None, allow_no_value=True)
    try:
        parser.read_string(data.decode("utf-8", "surrogateescape"))
        value = parser.get("core", "excludesfile", fallback=None)
    except configparser.Error:
        return None
    return value.strip().strip('"') if value else None
