"""Whether a path is one that other programs run or obey outside the sandbox: what a file
tool asks before writing in every mode (`protected_paths`), the agent's own installation
and what the sandbox keeps read-only in a home folder.

A command run outside the sandbox under an "always" given for `cp a.txt b.txt` writes with
everything the user has: `cp x .git/hooks/pre-commit`, `cp x .vscode/tasks.json` or a `.pth`
copied into the agent's own `.venv` would plant code that runs later, outside, unasked. So
an "always" never stretches to a command naming one (`named_paths`).
"""

from __future__ import annotations

from pathlib import Path

from hermes_core.fence.protected_paths import protected_reason

# Folders whose files other programs run or obey (the protected files' folders).
_HOLDERS: tuple[tuple[str, ...], ...] = (
    (".vscode",),
    (".zed",),
    (".helix",),
    (".devcontainer",),
    (".hg",),
    (".config", "git"),
)


def runs_outside(*paths: Path) -> bool:
    """Whether any of `paths` (absolute, as written and as resolved) is such a file, or a
    folder holding one."""
    from hermes_core.sandbox.protected import in_home_protected, own_code

    if protected_reason(*paths) is not None:
        return True
    # A folder holding such files, named as a destination or moved whole: `cp x .vscode`,
    # `cp -r staging/.vscode .`, `--target-directory=.devcontainer`.
    if any(tuple(p.lower() for p in path.parts[-2:])[-len(f) :] == f for path in paths for f in _HOLDERS):
        return True
    if any(_within(path, code) for path in paths for code in own_code()):
        return True
    return in_home_protected(*paths)


def _within(path: Path, code: Path) -> bool:
    # A folder that holds the installation counts too: `cp -r x .venv` writes into it.
    return path == code or path.is_relative_to(code) or code.is_relative_to(path)
