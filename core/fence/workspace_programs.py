"""Programs PATH finds inside the workspace (an activated `.venv/bin`, direnv's
`node_modules/.bin`): outside the sandbox they run the workspace's file, which a sandboxed
command may have replaced, not the system's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hermes_core.shell.parse import CommandLine
from hermes_core.shell.programs import all_invocations
from hermes_core.shell.tokens import ShellSyntaxError


def found_in_workspace(program: str, cwd: Path) -> Path | None:
    """Where PATH (as the unconfined command gets it) finds `program`, when that is inside
    the workspace."""
    found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
    if found is None:
        return None
    where = Path(os.path.abspath(os.path.join(cwd, found)))
    inside = where.is_relative_to(cwd) or Path(os.path.realpath(where)).is_relative_to(cwd)
    return where if inside else None


def workspace_programs(command: str | CommandLine, cwd: Path) -> list[str]:
    """The programs of `command` that PATH finds inside the workspace, as "`ls` is
    .venv/bin/ls": outside the sandbox they run the workspace's file, not the system's."""
    try:
        script = CommandLine.of(command).parsed()
    except ShellSyntaxError:
        return []
    found: dict[str, None] = {}
    for inv in all_invocations(script):
        word = inv.words[0].text
        if inv.words[0].literal and "/" not in word and (where := found_in_workspace(word, cwd)):
            shown = where.relative_to(cwd) if where.is_relative_to(cwd) else where
            found[f"`{word}` is {shown}"] = None
    return list(found)
