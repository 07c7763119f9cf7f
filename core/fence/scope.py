"""The workspace's scope: the session's roots, and every file opened beneath them.

`WorkspaceScope` says whether a path is inside by name (for approvals and messages) and
opens files by the kernel's word (`open_file`, `read_bytes`, `write_bytes`, on
`hermes_core.fence.beneath`): a symlink that leaves is refused at open time, the opened descriptor is
checked (a regular file, one name), and a write is a temporary file renamed inside the
opened directory. The errors and the size and text checks every workspace shares live
here too; `hermes_core.workspace` re-exports them with the Workspace port.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hermes_core.errors import HermesError
from hermes_core.fence.beneath import LeavesRoot, open_beneath, replace_in
from hermes_core.sandbox.secrets import is_env_file, is_secret_path, relocated

MAX_READ_BYTES = 2_000_000  # larger files are refused, read from disk or from the editor
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this much of a file makes it binary


class WorkspaceError(HermesError):
    """A file or process operation failed in a way the model should read about."""


class OutsideWorkspace(WorkspaceError):
    def __init__(
        self, path: str, resolved: Path, roots: tuple[Path, ...], *, links: int = 1, moved: bool = False
    ) -> None:
        allowed = ", ".join(str(r) for r in roots)
        if moved:
            message = f"{path!r} led outside the workspace ({allowed}) through a symlink when it was opened"
        elif links > 1:
            message = (
                f"{path!r} is a hard link ({links} names for one file); its other names may be "
                f"outside the workspace ({allowed}), so it counts as outside"
            )
        else:
            message = f"{path!r} resolves to {resolved}, which is outside the workspace ({allowed})"
        super().__init__(message)
        self.path = path
        self.resolved = resolved


class BinaryFile(WorkspaceError):
    pass


class NotRegularFile(WorkspaceError):
    """A FIFO, socket or device: reading one may block forever or touch hardware."""

    def __init__(self, path: str, mode: int) -> None:
        super().__init__(
            f"{path!r} is {_file_type(mode)}, not a regular file; only regular files are read or written."
        )


class FileTooLarge(WorkspaceError):
    pass


class SecretFile(WorkspaceError):
    """A path on the user's secrets list (the one the sandbox hides from commands)."""

    def __init__(self, path: str, *, writing: bool = False) -> None:
        why = f"{path!r} is hidden: it holds credentials (the same list the command sandbox hides)"
        if writing:
            message = (
                f"{why}. The agent's tools do not write over, patch or create such files (only a new "
                "dotenv file may be created); ask the user to change it."
            )
        else:
            message = (
                f"{why}, so the agent's tools neither read nor search it. If you need part of it, "
                "ask the user; they can share it by pasting it."
            )
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class WorkspaceScope:
    """The session's cwd plus extra allowed roots; resolves and checks paths."""

    cwd: Path
    extra_roots: tuple[Path, ...] = ()
    # Whose secrets are refused (`hermes_core.sandbox.secrets`): None is the user's home ($HOME);
    # `hidden` adds folders the sandbox also hides, the agent's own home.
    home: Path | None = None
    hidden: tuple[Path, ...] = ()
    # `hidden` plus the secrets the environment moved (`GNUPGHOME`, `CARGO_HOME`...), once.
    secret_extra: tuple[Path, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Resolved once, so a symlinked cwd (/tmp on macOS) compares equal to the
        # resolved paths checked against it.
        object.__setattr__(self, "cwd", Path(self.cwd).resolve())
        object.__setattr__(self, "extra_roots", tuple(Path(r).resolve() for r in self.extra_roots))
        object.__setattr__(self, "hidden", tuple(Path(h).resolve() for h in self.hidden))
        object.__setattr__(self, "secret_extra", (*self.hidden, *relocated()))

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.cwd, *self.extra_roots)

    def absolute(self, path: str | os.PathLike[str]) -> Path:
        """The path made absolute against cwd, `..` folded and symlinks followed."""
        raw = Path(os.path.expanduser(os.fspath(path)))
        if not raw.is_absolute():
            raw = self.cwd / raw
        # strict=False: a file about to be created does not exist yet, but its
        # existing parents' symlinks must still be followed.
        try:
            return raw.resolve(strict=False)
        except (RuntimeError, ValueError, OSError) as exc:  # symlink loop, NUL byte
            raise WorkspaceError(f"cannot resolve path {os.fspath(path)!r}: {exc}") from exc

    def contains(self, resolved: Path) -> bool:
        """Whether the resolved path lies under a root (by name only; see `outside`)."""
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def outside(self, resolved: Path) -> bool:
        """Whether touching the resolved path may reach beyond the workspace: a path under
        no root, or a regular file with more than one name (a hard link). Its other names
        cannot be found cheaply, and one of them may be `~/.ssh/id_rsa` or a file in a
        shared store (pnpm): reading it may leak a secret, writing it changes that file."""
        return not self.contains(resolved) or _hard_link_count(resolved) > 1

    def resolve(self, path: str | os.PathLike[str], *, allow_outside: bool = False) -> Path:
        resolved = self.absolute(path)
        if not allow_outside and self.outside(resolved):
            raise OutsideWorkspace(os.fspath(path), resolved, self.roots, links=_hard_link_count(resolved))
        return resolved

    @property
    def home_folder(self) -> Path:
        return self.home if self.home is not None else Path.home()

    def is_secret(self, path: Path) -> bool:
        """Whether the path is one of the user's secrets or inside one: the list the sandbox
        hides from commands, so read_file, search and commands agree."""
        return is_secret_path(path, home=self.home, extra=self.secret_extra)  # None: the user's, cheaply

    def display(self, path: Path) -> str:
        """A short path for titles: relative to cwd when inside it."""
        try:
            return str(path.relative_to(self.cwd))
        except ValueError:
            return str(path)

    # --- opening files: the name check above is for messages and approvals; these decide ---

    def open_file(
        self,
        path: str | os.PathLike[str],
        *,
        allow_outside: bool = False,
        directory_ok: bool = False,
        secret_ok: bool = False,
    ) -> int:
        """A read-only descriptor of the regular file at `path`, opened beneath a root at open
        time (a symlink that leaves is refused, whenever it was planted), checked on the
        descriptor: a regular file, one name unless `allow_outside`. Never blocks on a FIFO.
        With `directory_ok` a directory is opened too. A secret (`is_secret`, by its name
        and by where it was opened) is refused unless `secret_ok` (a caller that only looks
        at its identity). The caller closes it. Raises FileNotFoundError, IsADirectoryError,
        OutsideWorkspace, NotRegularFile, SecretFile or another OSError."""
        return self._open_checked(
            path, allow_outside=allow_outside, directory_ok=directory_ok, secret_ok=secret_ok
        )[0]

    def _open_checked(
        self,
        path: str | os.PathLike[str],
        *,
        allow_outside: bool = False,
        directory_ok: bool = False,
        secret_ok: bool = False,
    ) -> tuple[int, os.stat_result]:
        """`open_file`, with the descriptor's status (its size saves a reader a second fstat)."""
        raw = os.fspath(path)
        fd = self._open_beneath(raw, _READ_FLAGS, allow_outside=allow_outside)
        try:
            if not secret_ok and any(self.is_secret(p) for p in self._places(raw, fd)):
                raise SecretFile(raw)
            status = os.fstat(fd)
            if directory_ok and stat.S_ISDIR(status.st_mode):
                return fd, status
            _check_regular(raw, status.st_mode)
            if status.st_nlink > 1 and not allow_outside:
                raise OutsideWorkspace(raw, self.absolute(raw), self.roots, links=status.st_nlink)
        except BaseException:
            os.close(fd)
            raise
        return fd, status

    def read_bytes(self, path: str | os.PathLike[str], limit: int, *, allow_outside: bool = False) -> bytes:
        """The file's bytes through `open_file`; FileTooLarge past `limit`. Blocking: call it
        off the event loop."""
        fd, status = self._open_checked(path, allow_outside=allow_outside)
        try:
            size = status.st_size
            if size > limit:
                check_size(Path(path), size, limit)
            # A read allocates what it asks for up front: the size we know, then what it grew.
            data = os.read(fd, size + 1)
            while len(data) > size and len(data) <= limit and (more := os.read(fd, limit + 1 - len(data))):
                data += more
        finally:
            os.close(fd)
        if len(data) > limit:
            check_size(Path(path), len(data), limit)
        return data

    def write_bytes(self, path: str | os.PathLike[str], data: bytes, *, allow_outside: bool = False) -> None:
        """Replace the file at `path` (created with missing parents): a temporary file made in
        the directory opened beneath a root, renamed over the name inside that directory, so
        a symlink swapped in meanwhile is replaced, never followed. A symlink already there
        that stays inside is followed (its target is written); one that leaves is refused.
        Blocking: call it off the event loop."""
        directory, name, mode = self.open_for_replace(path, allow_outside=allow_outside)
        try:
            replace_in(directory, name, data, mode)
        finally:
            os.close(directory)

    def open_for_replace(
        self, path: str | os.PathLike[str], *, allow_outside: bool = False
    ) -> tuple[int, str, int | None]:
        """(the descriptor of the directory the file lives in, opened beneath a root and made
        when missing; the file's name there; its permission bits, None when it is new),
        following a symlink at the name by the same rules. The caller closes the descriptor."""
        raw = os.fspath(path)
        for _ in range(_MAX_LINK_HOPS):
            directory, name, found = self.open_parent(raw, allow_outside=allow_outside)
            if not isinstance(found, str):
                try:
                    self._refuse_secret_write(os.fspath(path), directory, name, found)
                except BaseException:
                    os.close(directory)
                    raise
                return directory, name, found
            os.close(directory)
            raw = found  # a symlink: where it points, by the same rules
        raise WorkspaceError(f"{os.fspath(path)!r}: too many levels of symbolic links")

    def _places(self, raw: str, fd: int, name: str = "") -> list[Path]:
        """Where `raw` is, for the secrets check: by name as written, by its links now, and
        where the descriptor (of it, or of its directory when `name`) was really opened."""
        named = Path(os.path.normpath(os.path.join(self.cwd, os.path.expanduser(raw))))
        opened = opened_path(fd)
        if opened is None:  # no /proc: where its links lead by name, now
            return [named, self.absolute(raw)]
        # Where it was really opened covers where its links led (resolving the name again
        # costs a stat per component and says less: it may lead elsewhere by now).
        return [named, opened / name if name else opened]

    def _refuse_secret_write(self, raw: str, directory: int, name: str, found: int | str | None) -> None:
        """Writing a secret is refused: replacing one needs its old text (the diff, a patch)
        and the home's credential files name programs to run (`~/.aws/config`,
        `~/.kube/config`). Creating a new dotenv file in a plain folder is everyday work."""
        secret = [p for p in self._places(raw, directory, name) if self.is_secret(p)]
        if not secret:
            return
        if found is None and all(is_env_file(p.name) and not self.is_secret(p.parent) for p in secret):
            return
        raise SecretFile(raw, writing=True)

    def _candidates(self, raw: str) -> Iterator[tuple[Path, str]]:
        """(root, path relative to it) pairs to open `raw` beneath, best first: by its name,
        then, only when those fail, by where its symlinks lead now (a link into another
        root). Opening decides."""
        raw = os.path.expanduser(raw)
        tried: list[tuple[Path, str]] = []
        if not os.path.isabs(raw):
            tried.append((self.cwd, raw))
        else:
            named = Path(os.path.normpath(raw))
            tried += [
                (root, str(named.relative_to(root))) for root in self.roots if named.is_relative_to(root)
            ]
        yield from tried
        resolved = self.absolute(raw)
        for root in self.roots:
            if resolved.is_relative_to(root) and (root, str(resolved.relative_to(root))) not in tried:
                yield root, str(resolved.relative_to(root))

    def _open_beneath(
        self, path: str | os.PathLike[str], flags: int, *, allow_outside: bool, make_dirs: bool = False
    ) -> int:
        raw = os.fspath(path)
        left: LeavesRoot | None = None
        for root, relative in self._candidates(raw):
            root_fd = os.open(root, _DIRECTORY_FLAGS)
            try:
                return open_beneath(root_fd, str(root), relative, flags, make_dirs=make_dirs)
            except LeavesRoot as exc:
                left = exc
            finally:
                os.close(root_fd)
        if allow_outside:  # the user approved this path outside: open it where it leads now
            target = self.absolute(raw)
            if make_dirs:
                target.mkdir(parents=True, exist_ok=True)
            return os.open(target, flags | os.O_CLOEXEC)
        resolved = self.absolute(raw)
        # By name it may be inside again by now: the open saw a link leading out.
        moved = left is not None and self.contains(resolved)
        raise OutsideWorkspace(raw, resolved, self.roots, moved=moved)

    def open_parent(
        self, raw: str, *, allow_outside: bool = False, make_dirs: bool = True
    ) -> tuple[int, str, int | str | None]:
        """(the descriptor of the directory `raw` names a file in, opened beneath a root (made
        when missing, with `make_dirs`), the file's name in it, what is there: its mode when a
        regular file, a path to follow when a symlink, None when nothing). The caller closes
        the descriptor."""
        parent, name = os.path.split(os.path.expanduser(raw))
        if name in ("", ".", ".."):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", raw)
        flags = os.O_RDONLY | os.O_DIRECTORY
        directory = self._open_beneath(parent or ".", flags, allow_outside=allow_outside, make_dirs=make_dirs)
        try:
            return directory, name, self._existing(directory, raw, parent, name, allow_outside)
        except BaseException:
            os.close(directory)
            raise

    def _existing(
        self, directory: int, raw: str, parent: str, name: str, allow_outside: bool
    ) -> int | str | None:
        # Looked at, not opened: the rename that follows replaces whatever the name holds then.
        try:
            status = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(status.st_mode):
            target = os.readlink(name, dir_fd=directory)
            return target if os.path.isabs(target) else os.path.join(parent, target)
        _check_regular(raw, status.st_mode)
        if status.st_nlink > 1 and not allow_outside:
            raise OutsideWorkspace(raw, self.absolute(raw), self.roots, links=status.st_nlink)
        return status.st_mode & 0o7777


def opened_path(fd: int) -> Path | None:
    """Where an open descriptor really is (Linux's /proc), or None when that is unknown."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return Path(target) if target.startswith("/") and not target.endswith(" (deleted)") else None


def _hard_link_count(resolved: Path) -> int:
    """How many names the regular file has; 1 for anything else (directories always have
    several, a file about to be created has none yet)."""
    try:
        status = os.stat(resolved)
    except (OSError, ValueError):
        return 1
    return status.st_nlink if stat.S_ISREG(status.st_mode) else 1


_MAX_LINK_HOPS = 40
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_TYPES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _file_type(mode: int) -> str:
    return next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")


def _check_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, mode)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value:.1f} TB"


def check_size(path: Path, size: int, limit: int) -> None:
    if size > limit:
        raise FileTooLarge(
            f"{path} is {human_size(size)}, larger than the {human_size(limit)} "
            "read limit. Use search to find the lines you need, or read a slice with offset "
            "and limit where the reader supports it (or `sed -n '100,200p'` in the terminal)."
        )


def check_text(path: Path, head: bytes, size: int) -> None:
    """Raise BinaryFile when the file's first bytes (`head`) hold a NUL byte."""
    if b"\0" in head[:BINARY_SNIFF_BYTES]:
        raise BinaryFile(f"{path} is a binary file ({human_size(size)}); it has no text to read.")
