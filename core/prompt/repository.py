"""The git repository a directory belongs to: where context files, skills, prompt commands
and memory are looked up from."""

from __future__ import annotations

from pathlib import Path


def repository_root(cwd: Path) -> Path | None:
    """The nearest directory at or above cwd holding `.git` (a directory, or a file in
    worktrees and submodules)."""
    cwd = Path(cwd).resolve()
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None
