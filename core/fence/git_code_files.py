"""The files git runs code from for one invocation: the config files and hooks of the
repository it works on, and what that config points at (`core.hooksPath`, `include.path`),
for the binding of an "always" outside the sandbox (`hermes_core.fence.command_files`)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from hermes_core.fence.gitignore import Repository
from hermes_core.sandbox.protected import configured_code
from hermes_core.shell.programs import Invocation

# git's options that choose another repository (its config and hooks) than the one around cwd.
_GIT_ELSEWHERE = ("--git-dir", "--work-tree", "--exec-path", "--super-prefix")


def git_files(inv: Invocation, cwd: Path) -> list[Path] | None:
    """What git runs code from: the config files and hooks of the repository it works on,
    or None when an option moves it where this cannot follow."""
    directory = cwd
    words = inv.words[1:]
    i = 0
    while i < len(words) and words[i].text.startswith("-"):
        text = words[i].text
        if text.startswith(_GIT_ELSEWHERE):
            return None
        if text in ("-C", "-c", "--namespace", "--config-env"):  # options that take a value
            if i + 1 >= len(words) or not words[i + 1].literal:
                return None
            if text == "-C":  # several `-C` add up, as in git
                directory = Path(
                    os.path.normpath(os.path.join(directory, os.path.expanduser(words[i + 1].text)))
                )
            i += 1
        i += 1
    repository = Repository.around(str(directory))
    if repository is None:
        return []
    git_dir = Path(repository.git_dir)
    common = Path(repository.common_dir)
    configs = [git_dir / "config", git_dir / "config.worktree", common / "config"]
    files = list(configs)
    hook_folders = [common / "hooks"]
    # What the config points git at outside `.git`: `core.hooksPath = .githooks`, and the
    # files `include.path` names (their `core.fsmonitor` runs as well as the config's own).
    for key, target in configured_code(configs, Path(repository.top)):
        if key == "hookspath":
            hook_folders.append(target)
        else:
            files.append(target)
    for hooks in hook_folders:
        with contextlib.suppress(OSError):
            files += sorted(hooks.iterdir())
    return files
