"""What in a tool call would escape the sandbox, for the approval policy: a command run
without it (the user's unconfined re-run, or any command while the sandbox cannot start),
and a file tool writing a file that other programs run outside it (`.git/config`, hooks…).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from hermes_core.events import ToolKind
from hermes_core.fence.protected_paths import GIT_REASON, lexical, protected_reason

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.tools.base import ApprovalFacts, Tool
    from hermes_core.workspace import Workspace

EDIT_KINDS: frozenset[ToolKind] = frozenset({"edit", "delete", "move"})  # the tools that write files

# The end of the "always" key of a command run outside the sandbox.
UNCONFINED_SUFFIX = "outside the sandbox"


def protected_write(tool: Tool[Any], args: BaseModel, workspace: Workspace) -> tuple[str, str] | None:
    """(the path, why) when a file tool would write a file that runs outside the sandbox."""
    if tool.kind not in EDIT_KINDS:
        return None
    return protected_paths(tool.paths(args), workspace)


def protected_paths(raws: list[str], workspace: Workspace) -> tuple[str, str] | None:
    """(the first path, why) of `raws` that runs outside the sandbox once written: what a
    file tool asks for in every mode, and what `/rewind` does not write back unasked."""
    scope = workspace.scope
    # The agent's own home, where the sandbox knows it (it hides it from commands).
    homes = workspace.sandbox.hidden if workspace.sandbox is not None else ()
    own = tuple(dict.fromkeys(p for home in homes for p in (Path(home), Path(home).resolve())))
    configured: list[tuple[str, Path]] | None = None
    for raw in raws:
        resolved = scope.absolute(raw)
        named = lexical(raw, scope.cwd)
        if why := protected_reason(named, resolved, own=own):
            return scope.display(resolved), why
        if any(p == code or p.is_relative_to(code) for p in (Path(named), resolved) for code in _own_code()):
            return scope.display(resolved), INSTALL_REASON
        if _in_home_protected(Path(named), resolved):
            return scope.display(resolved), HOME_REASON
        if _makes_a_bare_repository(Path(named)) or _makes_a_bare_repository(resolved):
            return scope.display(resolved), GIT_REASON
        if configured is None:
            configured = _configured_code(scope.roots)
        for key, target in configured:
            # A hook is a file directly in the hooks folder; an included config, the file.
            if any(
                p == target or (key == "hookspath" and p.parent == target) for p in (Path(named), resolved)
            ):
                return scope.display(resolved), GIT_REASON
    return None


INSTALL_REASON = "it is hermes-acp's own installation, which runs outside the sandbox at its next start"


def _makes_a_bare_repository(path: Path) -> bool:
    """Whether `path` lies in a folder laid out as a bare repository (`HEAD`, `objects/`,
    `refs/`), once it is written: git takes one for the repository of that folder and every
    folder below it (its config, with `core.worktree`, runs `core.fsmonitor` at a `git
    status` there), and no `.git` in the path says so. Writing its `config` or a hook in
    one that exists; completing one whose `HEAD` is there (writing a `HEAD` asks anyway:
    `protected_paths`, so a batch of writes cannot complete one unasked)."""
    for folder in list(path.parents)[:3]:
        first, *rest = path.relative_to(folder).parts
        head = (first == "HEAD" and not rest) or os.path.isfile(folder / "HEAD")
        objects = (first == "objects" and bool(rest)) or os.path.isdir(folder / "objects")
        refs = (first == "refs" and bool(rest)) or os.path.isdir(folder / "refs")
        if head and objects and refs:
            return True
    return False


def _own_code() -> list[Path]:
    """The agent's interpreter prefix, site-packages and entry script: the sandbox binds
    them read-only, even inside the workspace (the README's install puts `.venv` there); a
    `.pth` or a rewritten entry script would run unconfined at the next start."""
    from hermes_core.sandbox.protected import own_code

    return own_code()


HOME_REASON = (
    "it runs outside the sandbox at your next login, shell or build (a start-up file or tool install)"
)


def _in_home_protected(*paths: Path) -> bool:
    from hermes_core.sandbox.protected import in_home_protected

    return in_home_protected(*paths)


def _configured_code(roots: tuple[Path, ...]) -> list[tuple[str, Path]]:
    """The hooks folders and included config files each root's repository config names
    (`core.hooksPath = .githooks`, `include.path = ../tools/git.cfg`), by name and where
    they lead: git runs what they hold or name outside the sandbox, which binds them
    read-only; the file tools ask."""
    from hermes_core.sandbox.protected import git_guard

    found: list[tuple[str, Path]] = []
    for root in roots:
        for key, target in git_guard(root).configured:
            found += [(key, target), (key, target.resolve())]
    return found


def confinement_of(tool: Tool[Any], workspace: Workspace) -> str | None:
    """How this call's command would run: "sandboxed", "off" (the user turned the sandbox
    off) or "unavailable"; None for tools that run no command. A workspace without a
    sandbox (a library caller's) runs commands as the sandbox-off setting does."""
    if tool.kind != "execute" or not tool.needs_approval:
        return None
    if workspace.sandbox is None:
        return "off"
    confinement: str = workspace.sandbox.confinement
    return confinement


def would_leave_sandbox(facts: ApprovalFacts, confinement: str | None) -> bool:
    """Whether the call would run a command without the sandbox the user asked for."""
    if confinement is None or confinement == "off":
        return False
    return confinement == "unavailable" or facts.unconfined


def unpinned_links_reason(confinement: str | None, workspace: Workspace) -> str | None:
    """Why a sandboxed command asks in every mode where the sandbox cannot keep a root's
    editor folder or git state read-only because it is a link (`protected.unpinnable_links`);
    None when nothing is left open."""
    sandbox = workspace.sandbox
    if confinement != "sandboxed" or sandbox is None or sandbox.mode != "workspace-write":
        return None
    from hermes_core.sandbox.protected import unpinnable_links

    links = [link for root in workspace.scope.roots for link in unpinnable_links(root)]
    if not links:
        return None
    names = ", ".join(f"`{workspace.scope.display(link)}`" for link in links)
    return (
        f"the sandbox cannot keep {names} read-only: a symbolic link, which a sandboxed command "
        "could replace with settings your editor or git runs outside the sandbox"
    )


def unguarded_edits_reason(confinement: str | None, workspace: Workspace) -> str | None:
    """Why a sandboxed command asks in every mode where the sandbox cannot keep what your
    wildcard `Edit(…)` rules match read-only (`edit_globs.Globs.unguardable`); None when
    it can, or there is no such rule."""
    sandbox = workspace.sandbox
    if confinement != "sandboxed" or sandbox is None or sandbox.mode != "workspace-write":
        return None
    globs = sandbox.edit_globs
    return None if globs is None else globs.unguardable()


def unconfined_reason(confinement: str | None, sandbox: Sandbox | None) -> str:
    if confinement == "unavailable":
        detail = f" ({sandbox.availability.reason})" if sandbox is not None else ""
        return f"runs unconfined: the sandbox cannot start{detail}"
    return "runs outside the sandbox: it may write anywhere, read secrets and use the network"
