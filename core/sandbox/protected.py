"""Paths that stay read-only inside the sandbox even where a writable root holds them:
what runs outside the sandbox later when it is changed from inside.

- git's code-running state in each root's repository (`.git/config`, hooks, `info/`,
  submodules, linked worktrees), and the `.git` itself, so it cannot be swapped;
- the agent's own installation (interpreter prefix, site-packages, entry script);
- the user's shell start-up files, tool launchers and user-level tool installs in the home
  folder (they matter when a root contains the home folder);
- each root's editor project settings (`.vscode/`, `.zed/`, …), which name programs the
  editor starts outside the sandbox once the folder is trusted.
"""

from __future__ import annotations

import os
import re
import site
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hermes_core.fence.gitignore import read_regular
from hermes_core.sandbox import listing, repo_finder
from hermes_core.sandbox.file_memo import read_through

# Inside a `.git` directory: what git reads as configuration or runs as code. `commondir`
# is left out: creating an empty one as a mount point breaks git (see `GitGuard`).
GIT_FILES: tuple[str, ...] = ("config", "config.worktree")
GIT_DIRS: tuple[str, ...] = ("hooks", "info", "modules", "worktrees")

# Under the home folder: code that runs at login, in every shell, on every build.
HOME_PROTECTED: tuple[str, ...] = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".inputrc",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".pam_environment",
    ".gitconfig",
    ".config/git",
    ".config/fish",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd",
    ".config/pip",
    ".config/Code",
    ".config/zed",
    ".vscode",
    ".vscode-server",
    ".vimrc",
    ".vim",
    ".config/nvim",
    ".emacs",
    ".emacs.d",
    ".tmux.conf",
    ".local/bin",
    ".local/lib",  # the user's site-packages: a .pth there runs in every Python
    ".local/share/uv",
    ".local/pipx",
    ".cargo/bin",
    ".cargo/env",
    ".cargo/config",
    ".cargo/config.toml",
    ".rustup",
    "go/bin",
    ".deno/bin",
    ".bun/bin",
    ".nvm",
    ".pyenv",
    ".volta",
    ".sdkman",
    ".gradle/init.d",
    ".gradle/init.gradle",
    ".m2/extensions.xml",
    ".hermes-acp",
)


@dataclass(slots=True)
class GitGuard:
    """How one root's repository is protected: `pinned` are bound onto themselves first
    (a mount point cannot be renamed or removed, so `.git` cannot be swapped for a
    planted one), then `read_only` over them. `placeholders` are created as empty
    read-only directories: a `.git` where the root has none (a sandboxed `git init`
    then fails, and running it needs the user's approval) and missing hook dirs."""

    pinned: list[Path] = field(default_factory=list)
    read_only: list[Path] = field(default_factory=list)
    placeholders: list[Path] = field(default_factory=list)
    file_placeholders: list[Path] = field(default_factory=list)  # missing included config files
    # The placeholders inside an existing git dir (`modules`, `worktrees`, a missing `hooks`
    # or `info`): empty, git ignores them, so their mount points may stay between commands.
    inner_placeholders: list[Path] = field(default_factory=list)
    # A repository's `config` that is not there (`create_missing_config`).
    missing_config: list[Path] = field(default_factory=list)
    # Every hooks folder and included config file the config names, there or not: what the
    # file tools ask before writing (`core/policy/sandbox_escapes.py`).
    configured: list[tuple[str, Path]] = field(default_factory=list)


def git_guard(root: Path) -> GitGuard:
    guard = GitGuard()
    dotgit = root / ".git"
    if dotgit.is_symlink() or dotgit.is_file():
        # A worktree's or submodule's `gitdir:` file: where git looks is what it says.
        guard.read_only.append(dotgit)
        gitdir = _gitfile_target(dotgit)
        if gitdir is not None:
            _guard_gitdir(gitdir, guard)
            common = _common_dir(gitdir)
            if common is not None:
                _guard_gitdir(common, guard)
    elif dotgit.is_dir():
        guard.pinned.append(dotgit)
        _guard_gitdir(dotgit, guard)
    else:
        guard.placeholders.append(dotgit)
        return guard
    # Where the read-only config points git for code: a hooks folder in the work tree
    # (husky's `.husky/_`) and included config files would be as good as `.git/hooks`.
    configs = [p for p in guard.read_only if p.name in ("config", "config.worktree")]
    for key, target in configured_code(configs, root):
        guard.configured.append((key, target))
        if target.exists():
            guard.read_only.append(target)
        elif target.parent.is_dir():
            (guard.placeholders if key == "hookspath" else guard.file_placeholders).append(target)
    return guard


def configured_code(configs: list[Path], work_tree: Path) -> list[tuple[str, Path]]:
    """(`hookspath` | `path`, where) for each place these config files point git for code
    outside its own directory: the hooks folder `core.hooksPath` names (relative to the
    work tree) and the config files `include.path` / `includeIf` name (relative to the
    config), there or not yet."""
    return [
        (key, _expand(value, base=work_tree if key == "hookspath" else config.parent))
        for config in configs
        for key, value in _config_paths(config)
    ]


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]')
_ENTRY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*)")


def _config_paths(config: Path) -> tuple[tuple[str, str], ...]:
    """(`hookspath` | `path`, value) for `core.hooksPath` and `include(If).path` entries.
    Read again only when the file changed (`file_memo`): every launch asks."""
    return read_through(str(config), _read_config_paths)


def _read_config_paths(config: str) -> tuple[tuple[str, str], ...]:
    data = read_regular(config, 200_000)  # a FIFO planted as a config must not block
    if data is None:
        return ()
    text = data.decode("utf-8", errors="replace")
    found = []
    section = ""
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            line = line[header.end() :]
        entry = _ENTRY.match(line)
        if not entry:
            continue
        key, value = entry.group(1).lower(), entry.group(2).split(" #")[0].split(" ;")[0].strip().strip('"')
        wanted = (section, key) == ("core", "hookspath") or (
            section in ("include", "includeif") and key == "path"
        )
        if wanted and value:
            found.append((key, value))
    return tuple(found)


def _expand(value: str, *, base: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _guard_gitdir(gitdir: Path, guard: GitGuard) -> None:
    for name in GIT_FILES:
        path = gitdir / name
        if path.is_file() and not path.is_symlink():
            guard.read_only.append(path)
    for name in GIT_DIRS:
        path = gitdir / name
        if path.is_symlink():
            target = path.resolve()
            if target.is_dir():
                guard.read_only.append(target)
        elif path.is_dir():
            guard.read_only.append(path)
        elif not path.exists():
            guard.placeholders.append(path)
            guard.inner_placeholders.append(path)
    commondir = gitdir / "commondir"
    if commondir.is_file():
        guard.read_only.append(commondir)
    elif not os.path.lexists(gitdir / "config"):
        guard.missing_config.append(gitdir / "config")


def create_missing_config(config: Path) -> bool:
    """Make an empty `config` where a repository has none; whether one is there now.

    git needs no config to take a folder for a repository, and reads one created later: a
    sandboxed command could write `core.fsmonitor` there for the next git run outside.
    An empty file is what git reads as no config, and the sandbox binds it read-only like
    any other. Created on the host (as `git init` would), not mounted: a mount point that
    is removed after the command would leave another session's command without its mount."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        os.close(os.open(config, flags, 0o644))
    except FileExistsError:
        pass
    except OSError:
        return False
    return config.is_file() and not config.is_symlink()


def disarm_planted_commondir(root: Path) -> Path | None:
    """A `commondir` in a root's own `.git` directory, renamed aside; None when there is none.

    git reads configuration (and so `core.fsmonitor`) from the directory `commondir` names.
    git itself writes that file only in a linked worktree's gitdir (`.git/worktrees/<id>/`),
    never in a repository's main `.git`, so one there was planted. It cannot be made
    read-only in advance: an empty `commondir` (what a mount point leaves) breaks git.
    """
    planted = root / ".git" / "commondir"
    if not os.path.lexists(planted) or not planted.parent.is_dir() or planted.parent.is_symlink():
        return None
    aside = planted.with_name(f"commondir.refused-{os.getpid()}-{int(time.time())}")
    try:
        planted.rename(aside)
    except OSError:
        return None
    return aside


def _gitfile_target(dotgit: Path) -> Path | None:
    try:
        text = dotgit.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("gitdir:"):
            target = Path(line[len("gitdir:") :].strip())
            target = target if target.is_absolute() else dotgit.parent / target
            return target.resolve() if target.is_dir() else None
    return None


def _common_dir(gitdir: Path) -> Path | None:
    try:
        text = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    target = Path(text) if Path(text).is_absolute() else gitdir / text
    return target.resolve() if target.is_dir() else None


# A root's editor project settings: Zed starts `.zed/settings.json`'s `context_servers` and
# language-server binaries, VS Code the tasks, launch configurations, MCP servers and
# interpreter paths `.vscode/` names, once the folder is trusted; a trusted folder stays
# trusted when the file changes. `EDITOR_FOLDERS` are made read-only even where missing (an
# empty folder until the session ends); the others only where they exist.
EDITOR_FOLDERS: tuple[str, ...] = (".vscode", ".zed", ".claude")
# `.claude`, `.gemini`, `.cursor`, `.codex`: other coding agents' project settings, whose
# hooks and MCP servers those agents run outside any sandbox (`.claude` is in most
# repositories' future: a placeholder when missing).
# `.hermes`: this agent's own project rules (`config.toml`: deny rules, hooks).
EDITOR_FOLDERS_IF_PRESENT: tuple[str, ...] = (
    ".helix",
    ".devcontainer",
    ".gemini",
    ".cursor",
    ".codex",
    # More agents' project folders, each naming MCP servers, hooks or plugins it starts:
    # OpenCode (plugins run in-process at its start), Roo Code, Kiro, Continue, Amazon Q,
    # Windsurf, Qwen Code, Cline (`.clinerules/hooks/`); JetBrains IDEs' run configurations
    # and startup tasks; mise's config folders (below).
    ".opencode",
    ".roo",
    ".kiro",
    ".continue",
    ".amazonq",
    ".windsurf",
    ".qwen",
    ".clinerules",
    ".idea",
    ".mise",
    ".config/mise",
    ".hermes",
)
# What git's hook managers and Neovim run outside the sandbox, read-only where present:
# husky 9's `.husky/_/h` (the hooks folder git's config names) runs `.husky/pre-commit`,
# made or not, so all of `.husky/`; pre-commit's and lefthook's configs name the commands
# their installed hook runs at the next commit; Neovim runs `.nvim.lua`/`.exrc` once trusted.
# Where missing, a sandboxed command may create them: `planted` renames them aside after it.
# The hook managers' are a repository's: a nested repository's installed hook runs its own
# work tree's (`planted` and `editor_guard` look after those too).
HOOK_MANAGER_FILES: tuple[str, ...] = (
    ".husky",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    ".lefthook-local.yml",
)
RUN_LATER_IF_PRESENT: tuple[str, ...] = (
    *HOOK_MANAGER_FILES,
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".mcp.json",  # Claude Code's project MCP servers
    ".devcontainer.json",  # the dev container's `initializeCommand` runs on the host
    # mise runs a config's `[hooks]` and `env._.source` at every `cd` once activated, and
    # trusts a config by its path, not its content: a trusted file rewritten runs unasked.
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".config/mise.toml",
    # Agents without a folder: OpenCode's and Crush's MCP servers; aider (no trust at all)
    # runs `lint-cmd` after each edit it makes.
    "opencode.json",
    "opencode.jsonc",
    "crush.json",
    ".crush.json",
    ".aider.conf.yml",
)


@dataclass(slots=True)
class EditorGuard:
    read_only: list[Path] = field(default_factory=list)
    placeholders: list[Path] = field(default_factory=list)


def editor_guard(root: Path) -> EditorGuard:
    """A root's editor folders: bound read-only where they exist (a link: where it leads),
    empty read-only placeholders where `.vscode` or `.zed` is missing, so a sandboxed
    `mkdir .zed && echo … > .zed/settings.json` fails."""
    guard = EditorGuard()
    absent = listing.absent_in(str(root))
    for name in (*EDITOR_FOLDERS, *EDITOR_FOLDERS_IF_PRESENT, *RUN_LATER_IF_PRESENT):
        if absent(name):  # most of the sixty: no path made for them (~0.1 ms a launch)
            if name in EDITOR_FOLDERS:
                guard.placeholders.append(root / name)
            continue
        path = root / name
        if path.is_symlink():
            try:
                guard.read_only.append(path.resolve(strict=True))
            except (OSError, RuntimeError):
                continue
        elif path.is_dir() or (name in RUN_LATER_IF_PRESENT and path.is_file()):
            guard.read_only.append(path)
        elif not path.exists() and name in EDITOR_FOLDERS:
            guard.placeholders.append(path)
    for folder in repo_finder.repositories(str(root)):
        for name in HOOK_MANAGER_FILES:
            path = Path(folder) / name
            if not path.is_symlink() and (path.is_dir() or path.is_file()):
                guard.read_only.append(path)
    # Zed reads `.zed/settings.json` at every level, Helix the nearest `.helix` above where
    # it starts: those below the root that exist (a new one is renamed aside: `planted`).
    for name in repo_finder.NESTED_EDITORS:
        for folder in repo_finder.holding(str(root), name):
            path = Path(folder) / name
            if path.is_dir() and not path.is_symlink():
                guard.read_only.append(path)
    # mise reads its configs in every folder above where you work (`sub/mise.toml`).
    for found in repo_finder.run_later_below(str(root)):
        path = Path(found)
        if path not in guard.read_only and not path.is_symlink() and (path.is_dir() or path.is_file()):
            guard.read_only.append(path)
    return guard


def unpinnable_links(root: Path) -> list[Path]:
    """The names in a root the sandbox must keep read-only but cannot: an editor folder,
    `.git`, or git's config, hooks, info, modules or worktrees inside a root's `.git`
    folder, that is a symbolic link. A mount follows the link and lands on its target; the
    link itself stays an entry of a writable folder, so a sandboxed command could remove
    it and put a folder of its own there (`rm .zed; mkdir .zed; echo … >
    .zed/settings.json`), which the editor or git then runs outside the sandbox. The
    approval policy asks before each sandboxed command in such a root, naming them."""
    links = [
        root / name
        for name in (*EDITOR_FOLDERS, *EDITOR_FOLDERS_IF_PRESENT, ".git")
        if os.path.islink(root / name)
    ]
    dotgit = root / ".git"
    if not links or links[-1] != dotgit:
        links += [dotgit / name for name in (*GIT_FILES, *GIT_DIRS) if os.path.islink(dotgit / name)]
    return links


def own_code() -> list[Path]:
    """The agent's own installation: what runs the next time the agent starts."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    paths.update(Path(p) for p in site.getsitepackages())
    if site.ENABLE_USER_SITE:
        paths.add(Path(site.getusersitepackages()))
    if sys.argv and sys.argv[0]:
        paths.add(Path(sys.argv[0]))
    out = []
    for path in paths:
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        out.append(resolved)
    return sorted(set(out))


def own_sources() -> list[Path]:
    """Where the engine's own modules are read from: in an editable install (a checkout,
    perhaps under /tmp) that is the checkout, not site-packages. Kept visible, read-only,
    where the sandbox empties a temp dir: the image decoder's child runs them there."""
    return [Path(__file__).resolve().parents[1]]


def in_home_protected(*paths: Path) -> bool:
    """Whether a path is one the sandbox keeps read-only in the home folder
    (`HOME_PROTECTED`: `.config/autostart`, `~/.local/bin`, `.vimrc`…): where a root holds
    the home, the file tools ask before writing it, and no "always" outside the sandbox
    covers a command naming it."""
    homes = {Path.home(), Path.home().resolve()}
    for path in paths:
        for home in homes:
            if path.is_relative_to(home):
                relative = path.relative_to(home).as_posix()
                if any(relative == p or relative.startswith(p + "/") for p in HOME_PROTECTED):
                    return True
    return False


def home_protected(home: Path) -> list[Path]:
    """The start-up files and tool installs that exist under `home` (a link: its target)."""
    from hermes_core.sandbox.secrets import existing

    return existing(home, HOME_PROTECTED, want_dir=None)
