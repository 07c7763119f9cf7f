"""The Workspace port: every file and process the agent touches goes through it.

`LocalWorkspace` works on the local disk and local subprocesses (core/processes.py).
The ACP side plugs in its own implementation (editor buffers, editor terminals) that
follows the same scoping rules, which live here in `WorkspaceScope`, and the same read
limit and file checks, which live here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import stat
from collections.abc import AsyncIterator
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, Unpack

from core.errors import HermesError

if TYPE_CHECKING:
    from core.sandbox.bwrap import Sandbox

MAX_READ_BYTES = 2_000_000  # larger files are refused, read from disk or from the editor
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this much of a file makes it binary


class WorkspaceError(HermesError):
    """A file or process operation failed in a way the model should read about."""


class OutsideWorkspace(WorkspaceError):
    def __init__(self, path: str, resolved: Path, roots: tuple[Path, ...], *, links: int = 1) -> None:
        allowed = ", ".join(str(r) for r in roots)
        if links > 1:
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


class FileTooLarge(WorkspaceError):
    pass


@dataclass(frozen=True, slots=True)
class WorkspaceScope:
    """The session's cwd plus extra allowed roots; resolves and checks paths."""

    cwd: Path
    extra_roots: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        # Resolved once, so a symlinked cwd (/tmp on macOS) compares equal to the
        # resolved paths checked against it.
        object.__setattr__(self, "cwd", Path(self.cwd).resolve())
        object.__setattr__(self, "extra_roots", tuple(Path(r).resolve() for r in self.extra_roots))

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

    def display(self, path: Path) -> str:
        """A short path for titles: relative to cwd when inside it."""
        try:
            return str(path.relative_to(self.cwd))
        except ValueError:
            return str(path)


def _hard_link_count(resolved: Path) -> int:
    """How many names the regular file has; 1 for anything else (directories always have
    several, a file about to be created has none yet)."""
    try:
        status = os.stat(resolved)
    except (OSError, ValueError):
        return 1
    return status.st_nlink if stat.S_ISREG(status.st_mode) else 1


@dataclass(frozen=True, slots=True)
class CommandExit:
    exit_code: int | None
    signal: str | None = None


class RunningCommand(Protocol):
    """A command started in the workspace."""

    terminal_id: str | None  # set when an editor terminal shows it live

    def stream(self) -> AsyncIterator[str]:
        """Output chunks as they arrive, ending when the process exits (may yield nothing
        when the editor shows the output itself)."""
        ...

    async def wait(self) -> CommandExit: ...

    async def output(self) -> tuple[str, bool]:
        """All output so far (capped at the output limit, tail kept) and whether it was cut."""
        ...

    async def kill(self) -> None: ...

    async def release(self) -> None:
        """Free what the command holds (an editor terminal); kills it if still running."""
        ...


class CommandOptions(TypedDict, total=False):
    """How to start a command; every workspace takes the same options."""

    cwd: Path | None  # default: the workspace's cwd
    env: dict[str, str] | None  # added to the agent's environment
    output_limit: int  # characters of output kept (the tail); default 64,000
    unconfined: bool  # outside the sandbox: only after the user approved it


class Workspace(Protocol):
    scope: WorkspaceScope
    max_read_bytes: int

    async def read_text(self, path: Path) -> str:
        """The file's text (the editor's unsaved buffer where there is one).

        Raises FileNotFoundError, BinaryFile, FileTooLarge or WorkspaceError.
        """
        ...

    async def write_text(self, path: Path, content: str) -> None: ...

    async def start_command(self, command: str, **options: Unpack[CommandOptions]) -> RunningCommand: ...


# --- whether a file's text can be read: one judgement for every workspace -------------


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


def check_readable(path: Path, limit: int) -> bool:
    """Whether the file exists on disk; raises when it is a directory, too large or binary
    (for readers, like an editor, that hand over text without judging it)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    check_size(path, size, limit)
    with path.open("rb") as handle:
        check_text(path, handle.read(BINARY_SNIFF_BYTES), size)
    return True


@dataclass(slots=True)
class LocalWorkspace:
    """The workspace on the local disk, with commands run as local subprocesses."""

    scope: WorkspaceScope
    _: KW_ONLY
    max_read_bytes: int = MAX_READ_BYTES
    kill_grace: float = 2.0  # seconds between SIGTERM and SIGKILL
    sandbox: Sandbox | None = None  # None: commands run unconfined (library and unit use)

    async def read_text(self, path: Path) -> str:
        return await asyncio.to_thread(self._read_text, Path(path))

    def _read_text(self, path: Path) -> str:
        with path.open("rb") as handle:  # IsADirectoryError / FileNotFoundError surface as-is
            check_size(path, os.fstat(handle.fileno()).st_size, self.max_read_bytes)
            data = handle.read()
        check_text(path, data, len(data))
        # Stray non-UTF-8 bytes in a text file (Latin-1 comments) should not make it unreadable.
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, content: str) -> None:
        await asyncio.to_thread(self._write_text, Path(path), content)

    def _write_text(self, path: Path, content: str) -> None:
        target = Path(os.path.realpath(path))  # replace the file a symlink points to, not the link
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        # 0o666 lets the umask decide a new file's mode, as for any editor save.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8"))
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    async def start_command(self, command: str, **options: Unpack[CommandOptions]) -> RunningCommand:
        from core.processes import start_local_command

        return await start_local_command(self, command, **options)
