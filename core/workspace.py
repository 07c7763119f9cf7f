"""The Workspace port: every file and process the agent touches goes through it.

`LocalWorkspace` works on the local disk and local subprocesses. The ACP side
plugs in its own implementation (editor buffers, editor terminals) that follows
the same scoping rules, which live here in `WorkspaceScope`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class WorkspaceError(Exception):
    """A file or process operation failed in a way the model should read about."""


class OutsideWorkspace(WorkspaceError):
    def __init__(self, path: str, resolved: Path, roots: tuple[Path, ...]) -> None:
        allowed = ", ".join(str(r) for r in roots)
        super().__init__(f"{path!r} resolves to {resolved}, which is outside the workspace ({allowed})")
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
        return raw.resolve(strict=False)

    def contains(self, resolved: Path) -> bool:
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def resolve(self, path: str | os.PathLike[str], *, allow_outside: bool = False) -> Path:
        resolved = self.absolute(path)
        if not allow_outside and not self.contains(resolved):
            raise OutsideWorkspace(os.fspath(path), resolved, self.roots)
        return resolved

    def display(self, path: Path) -> str:
        """A short path for titles: relative to cwd when inside it."""
        try:
            return str(path.relative_to(self.cwd))
        except ValueError:
            return str(path)


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


class Workspace(Protocol):
    scope: WorkspaceScope

    async def read_text(self, path: Path) -> str:
        """The file's text (the editor's unsaved buffer where there is one).

        Raises FileNotFoundError, BinaryFile, FileTooLarge or WorkspaceError.
        """
        ...

    async def write_text(self, path: Path, content: str) -> None: ...

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = 64_000,
    ) -> RunningCommand: ...
