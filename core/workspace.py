"""The Workspace port: every file and process a tool touches goes through it.

Tools hand it the path the model wrote, as written; the port resolves it beneath the
session's roots and opens it by the kernel's word (`WorkspaceScope` in `hermes_core.fence.scope`,
on `hermes_core.fence.beneath`), so a tool cannot forget the fence: it never holds a resolved path
to open, and `tests/test_tools_use_the_port.py` checks that no tool touches the disk or
starts a process on its own. Listing and searching (`hermes_core.fence.ripgrep`) open what rg reads
the same way. The port also runs commands, in its sandbox (`sandbox`), and carries the read
limit (`max_read_bytes`).

`LocalWorkspace` works on the local disk and local subprocesses (core/execution/processes.py).
The ACP side plugs in its own implementation (editor buffers, editor terminals) that
follows the same scoping rules and opens files the same way, with the same read limit
and file checks.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Unpack

from hermes_core.execution.commands import CommandExit, CommandOptions, RunningCommand
from hermes_core.fence.scope import (
    BINARY_SNIFF_BYTES,
    MAX_READ_BYTES,
    BinaryFile,
    FileTooLarge,
    NotRegularFile,
    OutsideWorkspace,
    WorkspaceError,
    WorkspaceScope,
    check_size,
    check_text,
    human_size,
)

if TYPE_CHECKING:
    from hermes_core.fence.ripgrep import Found, Listing
    from hermes_core.sandbox.bwrap import Sandbox

__all__ = [
    "BINARY_SNIFF_BYTES",
    "MAX_READ_BYTES",
    "BinaryFile",
    "CommandExit",
    "CommandOptions",
    "FileTooLarge",
    "Found",
    "Listing",
    "NotRegularFile",
    "OutsideWorkspace",
    "RunningCommand",
    "WorkspaceError",
    "WorkspaceScope",
    "check_size",
    "check_text",
    "human_size",
]


def __getattr__(name: str) -> object:
    # rg's modules (~15 ms of imports and dataclasses) are what only listing and searching
    # need: imported at the first of those, not on a new thread's way to its first prompt.
    if name in ("Found", "Listing"):
        from hermes_core.fence import ripgrep

        return getattr(ripgrep, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Workspace(Protocol):
    """Where a tool's files and commands are. Every path is the one the model wrote
    (relative to the cwd, or absolute); the port opens it beneath the roots unless
    `allow_outside` (an approval let this call leave the workspace)."""

    @property
    def scope(self) -> WorkspaceScope:
        """The roots, for names: titles, locations and approvals. Opening is the port's."""
        ...

    @property
    def max_read_bytes(self) -> int:
        """Larger files are refused, read from disk or from the editor."""
        ...

    @property
    def sandbox(self) -> Sandbox | None:
        """The sandbox commands run in (None: unconfined, as with the sandbox off)."""
        ...

    async def read_text(self, path: str | os.PathLike[str], *, allow_outside: bool = False) -> str:
        """The file's text (the editor's unsaved buffer where there is one), opened beneath
        the workspace's roots (`WorkspaceScope.open_file`).

        Raises FileNotFoundError, BinaryFile, FileTooLarge or WorkspaceError.
        """
        ...

    async def read_bytes(
        self, path: str | os.PathLike[str], limit: int, *, allow_outside: bool = False
    ) -> bytes:
        """The file's bytes from disk, opened like `read_text`; FileTooLarge past `limit`."""
        ...

    async def write_text(
        self, path: str | os.PathLike[str], content: str, *, allow_outside: bool = False
    ) -> None:
        """Replace the file's text beneath the workspace's roots (`WorkspaceScope.write_bytes`)."""
        ...

    async def list_files(self, path: str, *, glob: str | None = None, allow_outside: bool = False) -> Listing:
        """The files under the directory `path` (`hermes_core.fence.ripgrep.list_files`)."""
        ...

    async def search(
        self,
        path: str,
        pattern: str,
        *,
        glob: str | None = None,
        case_sensitive: bool | None = None,
        allow_outside: bool = False,
    ) -> Found:
        """Lines matching `pattern` under `path` (`hermes_core.fence.ripgrep.search`)."""
        ...

    async def start_command(self, command: str, **options: Unpack[CommandOptions]) -> RunningCommand: ...


# --- whether a file's text can be read: one judgement for every workspace -------------


def check_readable(
    scope: WorkspaceScope, path: str | os.PathLike[str], limit: int, *, allow_outside: bool
) -> bool:
    """Whether the file exists on disk; raises when it is a directory, not a regular file,
    outside, too large or binary (for readers, like an editor, that hand over text without
    judging it). Opened by the workspace's rules, so what it judges is what is there."""
    try:
        fd = scope.open_file(path, allow_outside=allow_outside)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        check_size(Path(path), size, limit)
        check_text(Path(path), handle.read(BINARY_SNIFF_BYTES), size)
    return True


def opened_identity(
    scope: WorkspaceScope, path: str | os.PathLike[str], *, allow_outside: bool
) -> tuple[int, ...] | None:
    """(device, inode, change time) of the regular file `path` opens to by the workspace's
    rules, or None when there is none. A rename or a new link changes the change time."""
    try:
        fd = scope.open_file(path, allow_outside=allow_outside, secret_ok=True)
    except FileNotFoundError:
        return None
    try:
        status = os.fstat(fd)
    finally:
        os.close(fd)
    return (status.st_dev, status.st_ino, status.st_ctime_ns)


@dataclass(slots=True)
class LocalWorkspace:
    """The workspace on the local disk, with commands run as local subprocesses."""

    scope: WorkspaceScope
    _: KW_ONLY
    max_read_bytes: int = MAX_READ_BYTES
    kill_grace: float = 2.0  # seconds between SIGTERM and SIGKILL
    sandbox: Sandbox | None = None  # None: commands run unconfined (library and unit use)

    async def read_text(self, path: str | os.PathLike[str], *, allow_outside: bool = False) -> str:
        return await asyncio.to_thread(self._read_text, path, allow_outside)

    def _read_text(self, path: str | os.PathLike[str], allow_outside: bool) -> str:
        data = self.scope.read_bytes(path, self.max_read_bytes, allow_outside=allow_outside)
        check_text(Path(path), data, len(data))
        # Stray non-UTF-8 bytes in a text file (Latin-1 comments) should not make it unreadable.
        return data.decode("utf-8", errors="replace")

    async def read_bytes(
        self, path: str | os.PathLike[str], limit: int, *, allow_outside: bool = False
    ) -> bytes:
        return await asyncio.to_thread(self.scope.read_bytes, path, limit, allow_outside=allow_outside)

    async def write_text(
        self, path: str | os.PathLike[str], content: str, *, allow_outside: bool = False
    ) -> None:
        data = content.encode("utf-8")
        await asyncio.to_thread(self.scope.write_bytes, path, data, allow_outside=allow_outside)
        if self.sandbox is not None:  # the agent's own write: not a running command's plant
            self.sandbox.accept_written(self.scope.absolute(path))

    async def list_files(self, path: str, *, glob: str | None = None, allow_outside: bool = False) -> Listing:
        from hermes_core.fence import ripgrep

        return await ripgrep.list_files(self.scope, path, glob=glob, allow_outside=allow_outside)

    async def search(
        self,
        path: str,
        pattern: str,
        *,
        glob: str | None = None,
        case_sensitive: bool | None = None,
        allow_outside: bool = False,
    ) -> Found:
        from hermes_core.fence import ripgrep

        return await ripgrep.search(
            self.scope, path, pattern, glob=glob, case_sensitive=case_sensitive, allow_outside=allow_outside
        )

    async def start_command(self, command: str, **options: Unpack[CommandOptions]) -> RunningCommand:
        from hermes_core.execution.processes import start_local_command

        return await start_local_command(self, command, **options)
