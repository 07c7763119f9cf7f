"""Files inside the workspace that other programs execute outside the sandbox: a file tool
writing one asks in every mode, yolo included, and says why.

What is protected, at any depth (a nested repository's or a submodule's as well):
- everything git reads as its own: any path through a `.git` directory (config,
  config.worktree, hooks, info, modules/*/config, commondir...) and a `.git` file itself
  (`gitdir:` would point git at a config the model wrote elsewhere); `.gitmodules`
  (submodule URLs and update commands). Git runs what these name (`core.fsmonitor`,
  hooks, `core.sshCommand`, filters) the next time the user or their editor runs git.
- `.vscode/settings.json`, `.vscode/tasks.json`, `.devcontainer.json`,
  `.devcontainer/devcontainer.json`: the editor runs the programs they name (terminal
  profiles, interpreters, folder-open tasks, `initializeCommand`) in a trusted workspace.

Not protected: `.envrc` (direnv runs it only after `direnv allow`, which it binds to the
file's content: a changed file asks the user again), `Makefile`, `package.json` scripts and
the like (they run only when the user asks for them, and the agent's own runs of them are
sandboxed or asked for).

Both the path as written and the path its symlinks lead to are checked: `link/config`
with `link -> .git`, and `.git/config` where `.git` is a link elsewhere, are the same file
to git.
"""

from __future__ import annotations

import os
from pathlib import PurePath

GIT_REASON = "git runs what this file names outside the sandbox"
EDITOR_REASON = "your editor runs what this file names outside the sandbox"

_EDITOR_FILES: frozenset[tuple[str, ...]] = frozenset(
    {
        (".vscode", "settings.json"),
        (".vscode", "tasks.json"),
        (".devcontainer", "devcontainer.json"),
        (".devcontainer.json",),
    }
)


def protected_reason(*paths: PurePath) -> str | None:
    """Why writing any of these paths leaves the sandbox, or None when none is protected."""
    for path in paths:
        # Case folded: macOS and Windows file systems read `.GIT/config` as `.git/config`.
        parts = [part.lower() for part in path.parts]
        if ".git" in parts or parts[-1:] == [".gitmodules"]:
            return GIT_REASON
        if tuple(parts[-2:]) in _EDITOR_FILES or tuple(parts[-1:]) in _EDITOR_FILES:
            return EDITOR_REASON
    return None


def lexical(path: str, cwd: PurePath) -> PurePath:
    """The path made absolute with `..` folded by name, symlinks not followed."""
    raw = os.path.expanduser(path)
    return PurePath(os.path.normpath(os.path.join(cwd, raw)))
