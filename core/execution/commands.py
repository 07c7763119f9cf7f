"""A command started in a workspace: how to start it, its handle, how it ended.

The types every workspace's commands share (`LocalWorkspace` runs them with
core/execution/processes.py, the editor's terminals are the ACP side's), apart from the
`Workspace` port so that the code running commands does not import the port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox


@dataclass(frozen=True, slots=True)
class CommandExit:
    exit_code: int | None
    signal: str | None = None


class RunningCommand(Protocol):
    """A command started in the workspace."""

    terminal_id: str | None  # set when an editor terminal shows it live
    sandbox: Sandbox | None  # the sandbox it runs in; None when it runs unconfined

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
