"""What a sandboxed command may leave that no mount could forbid in advance, looked for
after it ends and undone: names that do not exist yet, and repositories below a root.

A mount needs something to mount on. A root's hook-manager files, other agents' project
settings and Neovim's startup files are bound read-only where they exist; where they do
not, a placeholder would cost a mount per launch and put an empty `.pre-commit-config.yaml`
(which breaks pre-commit) or `.mcp.json` in the user's folder. Repositories below a root
(a vendored clone, one a command makes with `git init`) have their own `.git/config` and
hooks, which git runs when the user works in that folder. So, at each launch, `watch`
notes which of those names are missing and what each repository below a root holds; after
the command (`undo`), a name that appeared is renamed aside, a repository config that now
names code (`git_inert`) is put back as it was (or renamed aside, when it is new), and a
new or changed hook is renamed aside. Renamed, not deleted: the user can look at it. The
messages go to the model with the command's result and to the log.

Bounds: repositories are found at any depth, dependency folders included, by watches the
kernel keeps (`repo_finder`; where those run out, three folders down as before). What a
command plants stays until it ends: a background command's until it ends or the session's
next command starts.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from hermes_core.fence.gitignore import read_regular
from hermes_core.sandbox import listing, protected, repo_finder
from hermes_core.sandbox.git_inert import names_no_code

# A root's names that run later outside the sandbox, kept read-only where they exist.
PLANTABLE: tuple[str, ...] = (*protected.RUN_LATER_IF_PRESENT, *protected.EDITOR_FOLDERS_IF_PRESENT)
_CONFIG_LIMIT = 200_000

_Id = tuple[int, int, int]  # device, inode, file type


@dataclass(frozen=True, slots=True)
class RepoState:
    """What git would run from one repository below a root, as the launch found it."""

    dotgit: _Id | None
    # What git reads config from (`config`, `config.worktree`, the common dir's `config`)
    # and `commondir`: their bytes by path, None when absent.
    configs: dict[str, bytes | None]
    hooks: frozenset[tuple[str, int, int, int]]  # (path, inode, size, mtime) of each real hook
    hooks_id: _Id | None


@dataclass(slots=True)
class Watch:
    missing: list[Path] = field(default_factory=list)
    # A root's `PLANTABLE` names missing at launch, by root: looked up again in the root's
    # cached listing while no entry of the root changed (`listing.listed_absent_in`: one
    # stat) rather than one `lstat` each (some forty) after every command.
    absent: dict[Path, list[str]] = field(default_factory=dict)
    repos: dict[Path, RepoState] = field(default_factory=dict)
    editors: set[Path] = field(default_factory=set)  # `sub/.zed`, `sub/.helix` there at launch
    bare: dict[Path, RepoState] = field(default_factory=dict)  # bare repositories below a root


def watch(roots: tuple[Path, ...]) -> Watch:
    """The state `undo` compares with: taken when a command launches."""
    seen = Watch()
    for root in roots:
        absent = listing.absent_in(str(root))
        seen.absent[root] = [name for name in PLANTABLE if absent(name)]
        for work_tree in nested_repositories(root):
            seen.repos[work_tree] = _state(work_tree)
            missing = (work_tree / name for name in protected.HOOK_MANAGER_FILES)
            seen.missing += [path for path in missing if not os.path.lexists(path)]
        seen.editors.update(nested_editor_folders(root))
        for folder in bare_repositories(root):
            seen.bare[folder] = _state(folder, bare=True)
    return seen


def bare_repositories(root: Path) -> list[Path]:
    """`root` and folders below it laid out as a bare repository (`HEAD`, `objects/`, `refs/`): git
    takes one for the repository when you work in it or below (unless your config says
    `safe.bareRepository = explicit`), and runs what its config names: `core.pager` at your
    next `git log`, `diff.external`, aliases."""
    found = []
    # The root itself too: one with no `.git` of its own, laid out as one (`git init --bare
    # .`) with the folder above as its work tree, is what `git status` there finds.
    for folder in (str(root), *repo_finder.holding(str(root), "HEAD")):
        path = Path(folder)
        if os.path.isdir(path / "objects") and os.path.isdir(path / "refs") and os.path.isfile(path / "HEAD"):
            found.append(path)
    return found


def nested_editor_folders(root: Path) -> list[Path]:
    """The editor folders below `root` that an editor reads at any depth (`sub/.zed`), and
    the configs another tool reads in every folder above the one you work in
    (`sub/mise.toml`)."""
    editors = [
        Path(folder) / name
        for name in repo_finder.NESTED_EDITORS
        for folder in repo_finder.holding(str(root), name)
    ]
    return editors + [Path(path) for path in repo_finder.run_later_below(str(root))]


def accept(seen: Watch, path: Path, roots: tuple[Path, ...]) -> None:
    """The agent's own file tools wrote `path` (asked for, where it is one of these): what
    it is now is not a command's plant."""
    seen.missing = [m for m in seen.missing if not (path == m or path.is_relative_to(m))]
    for root, names in seen.absent.items():
        seen.absent[root] = [n for n in names if not (path == root / n or path.is_relative_to(root / n))]
    seen.editors.update(p for p in path.parents if p.name in repo_finder.NESTED_EDITORS)
    seen.editors.update(p for p in (path, *path.parents) if repo_finder.run_later_name(p.name))
    for folder in path.parents:
        if folder in roots or not any(folder.is_relative_to(root) for root in roots):
            return
        if os.path.lexists(folder / ".git"):
            seen.repos[folder] = _state(folder)
            return


def undo(seen: Watch, roots: tuple[Path, ...]) -> list[str]:
    """Undo what a command planted since `seen`; one sentence for each thing undone."""
    said: list[str] = []
    appeared: list[Path] = []
    for root, names in seen.absent.items():
        absent = listing.listed_absent_in(str(root))
        if absent is None:  # the root changed (or was never listed): each name on the disk
            appeared += [root / name for name in names if os.path.lexists(root / name)]
        else:
            appeared += [root / name for name in names if not absent(name)]
    appeared += [path for path in seen.missing if os.path.lexists(path)]
    for path in appeared:
        if os.path.lexists(path):
            aside = _aside(path)
            if aside is not None:
                said.append(
                    f"`{path}` appeared; it runs outside the sandbox later, so it was moved to `{aside}`"
                )
    for root in roots:
        for work_tree in nested_repositories(root):
            said += _undo_repository(work_tree, seen.repos.get(work_tree), roots)
        for folder in bare_repositories(root):
            said += _undo_repository(folder, seen.bare.get(folder), roots, bare=True)
        for folder in nested_editor_folders(root):
            if folder not in seen.editors and _inside(folder, roots):
                aside = _aside(folder)
                if aside is not None and repo_finder.run_later_name(folder.name):
                    said.append(
                        f"`{folder}` appeared; mise reads it in that folder and every folder below, and runs "
                        f"the hooks and scripts it names outside the sandbox, so it was moved to `{aside}`; "
                        "write it with write_file, which asks the user"
                    )
                elif aside is not None:
                    said.append(
                        f"`{folder}` appeared; your editor reads its settings in that folder and runs the "
                        f"programs they name outside the sandbox, so it was moved to `{aside}`"
                    )
    return said


def prepare(roots: tuple[Path, ...]) -> None:
    """Start watching these roots now (`repo_finder`: one walk each, in a thread)."""
    repo_finder.prepare(tuple(str(root) for root in roots))


def nested_repositories(root: Path) -> list[Path]:
    """The folders below `root`, at any depth, holding a `.git` of any kind: a folder, a
    `gitdir:` file or a link (`repo_finder`: the kernel tells what changed, no walk)."""
    return [Path(folder) for folder in repo_finder.repositories(str(root))]


def _id(path: Path) -> _Id | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, stat.S_IFMT(info.st_mode))


def git_dir(work_tree: Path) -> Path | None:
    """Where git keeps this repository: its `.git` folder, or what a `gitdir:` file or a
    link names."""
    dotgit = work_tree / ".git"
    if os.path.isdir(dotgit):
        return Path(os.path.realpath(dotgit)) if os.path.islink(dotgit) else dotgit
    data = read_regular(str(dotgit), 4096)
    if data is None:
        return None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("gitdir:"):
            target = Path(line[len("gitdir:") :].strip())
            target = target if target.is_absolute() else work_tree / target
            return target.resolve() if target.is_dir() else None
    return None


def _state(work_tree: Path, bare: bool = False) -> RepoState:
    gitdir = work_tree if bare else git_dir(work_tree)
    if gitdir is None:
        return RepoState(_id(work_tree / ".git"), {}, frozenset(), None)
    files = _config_files(gitdir, work_tree)
    configs = {str(path): read_regular(str(path), _CONFIG_LIMIT) for path in files}
    hooks = _hooks(_hook_folders(gitdir, work_tree, files))
    return RepoState(_id(work_tree / ".git"), configs, hooks, _id(gitdir / "hooks"))


def _config_files(gitdir: Path, work_tree: Path) -> list[Path]:
    """Where git reads this repository's config: its own files, `commondir` (it moves the
    config elsewhere), the config of the directory that names, and the files the config
    includes (`include.path`), when they exist."""
    files = [gitdir / name for name in protected.GIT_FILES] + [gitdir / "commondir"]
    files += [folder / "config" for folder in _module_dirs(gitdir)]
    files += [folder / "config.worktree" for folder in _subfolders(gitdir / "worktrees")]
    data = read_regular(str(gitdir / "commondir"), 4096)
    if data is not None:
        common = Path(data.decode("utf-8", "replace").strip())
        common = common if common.is_absolute() else gitdir / common
        if common.is_dir():
            files.append(common.resolve() / "config")
    configs = [f for f in files if f.name != "commondir" and os.path.isfile(f)]
    files += [target for key, target in protected.configured_code(configs, work_tree) if key == "path"]
    return files


def _hook_folders(gitdir: Path, work_tree: Path, files: list[Path]) -> list[Path]:
    """`hooks` (the repository's and its submodules'), and the folder `core.hooksPath`
    names (husky's `.husky/_`, a `.githooks`)."""
    configs = [f for f in files if f.name != "commondir" and os.path.isfile(f)]
    named = [target for key, target in protected.configured_code(configs, work_tree) if key == "hookspath"]
    return [gitdir / "hooks", *(folder / "hooks" for folder in _module_dirs(gitdir)), *named]


def _module_dirs(gitdir: Path, depth: int = 6) -> list[Path]:
    """The submodules' git directories below `modules/` (a name may hold slashes:
    `modules/libs/foo`; a submodule's own inside its `modules/`): git runs their config and
    hooks when it works in a submodule, or when a later `git submodule update` reuses one."""
    found = []
    pending = [(gitdir / "modules", depth)]
    while pending:
        folder, left = pending.pop()
        for sub in _subfolders(folder):
            if os.path.lexists(sub / "HEAD") or os.path.lexists(sub / "config"):
                found.append(sub)
                if left > 1:
                    pending.append((sub / "modules", left - 1))
            elif left > 1:
                pending.append((sub, left - 1))
    return found


def _subfolders(folder: Path) -> list[Path]:
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    return []


def _hooks(folders: list[Path]) -> frozenset[tuple[str, int, int, int]]:
    found = set()
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".sample") or ".refused-" in entry.name:
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.add((entry.path, info.st_ino, info.st_size, info.st_mtime_ns))
    return frozenset(found)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    """Whether `path` (its folder's real place) lies in a root: only there could a sandboxed
    command have written it. A `.git` link to `~/.ssh` must not make the agent rename
    `~/.ssh/config`."""
    real = Path(os.path.realpath(path.parent)) / path.name
    return any(real.is_relative_to(root) for root in roots)


def _undo_repository(
    work_tree: Path, before: RepoState | None, roots: tuple[Path, ...], bare: bool = False
) -> list[str]:
    if before is not None and _state(work_tree, bare) == before:
        return []  # most commands: nothing changed
    gitdir = work_tree if bare else git_dir(work_tree)
    if gitdir is None:
        return []
    if before is not None and before.dotgit != _id(work_tree / ".git"):
        before = None  # `.git` was replaced: nothing of the old one counts
    said: list[str] = []
    if not _inside(gitdir / "config", roots):
        # Outside the roots, read-only to the sandbox and not ours to touch; but a `.git`
        # the command pointed there (`gitdir: /tmp/someone-elses`) is in the root.
        if before is None and not _runs_nothing(gitdir):
            aside = _aside(work_tree / ".git")
            if aside is not None:
                said.append(
                    f"`{work_tree}/.git` points git at code outside the workspace: moved to `{aside}`"
                )
        return said
    files = _config_files(gitdir, work_tree)
    for config in files:
        if not _inside(config, roots):
            continue
        old = before.configs.get(str(config)) if before is not None else None
        if not os.path.lexists(config):
            continue
        now = read_regular(str(config), _CONFIG_LIMIT)
        if now == old and not os.path.islink(config):
            continue
        plain = now is not None and not os.path.islink(config) and config.name != "commondir"
        if plain and now is not None and names_no_code(now.decode("utf-8", "replace")):
            continue  # `git clone`, `git remote add`: nothing git would run
        aside = _aside(config)
        if aside is None:
            continue
        if old is not None:
            _restore(config, old)
            said.append(
                f"`{config}` was changed to name a program git runs outside the sandbox: it is back as it "
                f"was, the changed file is `{aside}`"
            )
        else:
            said.append(f"`{config}` names a program git runs outside the sandbox: moved to `{aside}`")
    hooks = gitdir / "hooks"
    if os.path.islink(hooks) and (before is None or before.hooks_id != _id(hooks)):
        aside = _aside(hooks)
        if aside is not None:
            said.append(f"`{hooks}` became a link git runs hooks through: moved to `{aside}`")
        return said
    kept = before.hooks if before is not None else frozenset()
    for path, *_ in sorted(_hooks(_hook_folders(gitdir, work_tree, files)) - kept):
        hook = Path(path)
        if not _inside(hook, roots):
            continue
        aside = _aside(hook)
        if aside is not None:
            said.append(f"`{hook}` is a hook git runs outside the sandbox: moved to `{aside}`")
    return said


def _runs_nothing(gitdir: Path) -> bool:
    """Whether a repository's config files name no code and its hooks folder holds none."""
    files = _config_files(gitdir, gitdir.parent)
    for config in files:
        data = read_regular(str(config), _CONFIG_LIMIT)
        if config.name == "commondir" and os.path.lexists(config):
            return False
        if data is not None and not names_no_code(data.decode("utf-8", "replace")):
            return False
    return not _hooks(_hook_folders(gitdir, gitdir.parent, files))


def _aside(path: Path) -> Path | None:
    """Rename `path` to an unguessable name beside it (a command cannot have made a folder
    of that name to make the rename fail); where even that fails, remove it. None when it is
    still there."""
    aside = path.with_name(f"{path.name}.refused-{secrets.token_hex(6)}")
    try:
        path.rename(aside)
        return aside
    except OSError:
        pass
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    return None if os.path.lexists(path) else Path("(removed)")


def _restore(path: Path, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with contextlib.suppress(OSError):
        fd = os.open(path, flags, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
