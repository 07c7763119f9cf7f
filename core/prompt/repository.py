"""The git repository a directory belongs to: where context files, skills, prompt commands
and memory are looked up from."""

from __future__ import annotations

import os
from pathlib import Path


def repository_root(cwd: Path) -> Path | None:
    """The nearest directory at or above cwd holding `.git` (a directory, or a file in
    worktrees and submodules).

    Above cwd, the `.git` and its folder must belong to you or to cwd's owner, as git's
    `safe.directory` asks: anyone may create `/tmp/.git` and `/tmp/AGENTS.md`, and every
    folder opened under /tmp would then follow that user's instructions, skills and
    commands. A `.git` owned by someone else ends the search with no repository."""
    cwd = Path(cwd).resolve()
    try:
        owners = {os.geteuid(), cwd.stat().st_uid}
    except OSError:
        owners = {os.geteuid()}
    for directory in (cwd, *cwd.parents):
        marker = directory / ".git"
        try:
            found = marker.stat()
            holder = directory.stat()
        except OSError:
            continue
        if directory != cwd and (found.st_uid not in owners or holder.st_uid not in owners):
            return None
        return directory
    return None
