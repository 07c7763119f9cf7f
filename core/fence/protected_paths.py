"""Files inside the workspace that other programs execute outside the sandbox: a file tool
writing one asks in every mode, yolo included, and says why.

What is protected, at any depth (a nested repository's or a submodule's as well):
- everything git reads as its own: any path through a `.git` directory (config,
  config.worktree, hooks, info, modules/*/config, commondir...) and a `.git` file itself
  (`gitdir:` would point git at a config the model wrote elsewhere); `.gitmodules`
  (submodule URLs and update commands). Git runs what these name (`core.fsmonitor`,
  hooks, `core.sshCommand`, filters) the next time the user or their editor runs git.
- hook managers' hooks and configs: `.husky/`, `.pre-commit-config.yaml`, `lefthook.yml`
  (git runs them on the next commit; the hook that calls them is already installed);
- `.vscode/settings.json`, `.vscode/tasks.json`, `.devcontainer.json`,
  `.devcontainer/devcontainer.json`: the editor runs the programs they name (terminal
  profiles, interpreters, folder-open tasks, `initializeCommand`) in a trusted workspace;
- other coding agents' project settings: `.claude/settings.json` and `settings.local.json`,
  `.mcp.json`, `.gemini/settings.json`, `.cursor/mcp.json`, `.codex/config.toml` (Claude
  Code, Gemini CLI, Cursor and Codex run the hooks and MCP servers they name, once the folder
  was trusted, whatever the file says by then);
- hermes-acp's own project rules, `.hermes/config.toml`: its deny and ask rules apply at
  once (the user's guards for a repository may be there), its hooks once trusted;
- hermes-acp's own home (`config.toml` could turn the sandbox off, `memory/` is every
  later session's instructions), for a workspace that contains it;
- what a home folder runs or obeys, for a workspace that is one (or a dotfiles repository
  linked into one): `.gitconfig`, `.config/git/config`, shell startup files (`.bashrc`,
  `.profile`, `.zshrc`…), anything under `.ssh/` (`config`'s ProxyCommand,
  `authorized_keys`), `.hg/hgrc`.

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
HOOK_REASON = "git runs this on your next commit, outside the sandbox (a hook manager's hook or config)"
EDITOR_REASON = "your editor runs what this file names outside the sandbox"
SHELL_REASON = "your shell or ssh reads this outside the sandbox (a startup or login file)"
OWN_REASON = "it is hermes-acp's own settings, keys or memory, which every later session follows"
RULES_REASON = (
    "it holds hermes-acp's own permission rules and hooks for this project, which every later session follows"
)
AGENT_REASON = "another coding agent runs the hooks or MCP servers this file names, outside the sandbox"
MISE_REASON = "mise runs what this file names when your shell enters the folder, outside the sandbox"

# (the last path components, why): matched against the end of a path, case-folded.
_FILES: dict[tuple[str, ...], str] = {
    (".gitmodules",): GIT_REASON,
    # What makes a folder a repository with no `.git` in sight: git takes one holding `HEAD`,
    # `objects/` and `refs/` for the repository of every folder below it (a bare one, or
    # with `core.worktree` a work tree's). Lexical, so a batch of writes cannot order around it.
    ("head",): GIT_REASON,
    (".gitconfig",): GIT_REASON,  # a home folder (or a dotfiles repository linked into one)
    (".config", "git", "config"): GIT_REASON,
    (".hg", "hgrc"): GIT_REASON.replace("git", "mercurial", 1),
    (".pre-commit-config.yaml",): HOOK_REASON,
    ("lefthook.yml",): HOOK_REASON,
    (".lefthook.yml",): HOOK_REASON,
    (".vscode", "settings.json"): EDITOR_REASON,
    (".vscode", "tasks.json"): EDITOR_REASON,
    (".devcontainer", "devcontainer.json"): EDITOR_REASON,
    (".devcontainer.json",): EDITOR_REASON,
    # Zed (the agent's own editor) starts the language and MCP servers these name, once the
    # folder is trusted; VS Code its MCP servers and debug launches; Helix its language
    # servers; Neovim (with 'exrc') runs the folder's startup file.
    (".zed", "settings.json"): EDITOR_REASON,
    (".zed", "tasks.json"): EDITOR_REASON,
    (".zed", "debug.json"): EDITOR_REASON,
    (".vscode", "mcp.json"): EDITOR_REASON,
    (".vscode", "launch.json"): EDITOR_REASON,
    (".helix", "languages.toml"): EDITOR_REASON,
    (".nvim.lua",): EDITOR_REASON,
    (".nvimrc",): EDITOR_REASON,
    (".exrc",): EDITOR_REASON,
    # Other coding agents run the hooks and MCP servers their project settings name, once
    # the folder is trusted (by folder, not by content): Claude Code, Gemini CLI, Cursor.
    # This agent's own project rules: deny and ask rules apply at once, so the user's guards
    # for a repository live there too; rewritten, the next session had none.
    (".hermes", "config.toml"): RULES_REASON,
    (".claude", "settings.json"): AGENT_REASON,
    (".claude", "settings.local.json"): AGENT_REASON,
    (".mcp.json",): AGENT_REASON,
    (".gemini", "settings.json"): AGENT_REASON,
    (".cursor", "mcp.json"): AGENT_REASON,
    (".codex", "config.toml"): AGENT_REASON,
    (".roo", "mcp.json"): AGENT_REASON,
    (".windsurf", "hooks.json"): AGENT_REASON,
    (".qwen", "settings.json"): AGENT_REASON,
    ("opencode.json",): AGENT_REASON,
    ("opencode.jsonc",): AGENT_REASON,
    ("crush.json",): AGENT_REASON,
    (".crush.json",): AGENT_REASON,
    (".aider.conf.yml",): AGENT_REASON,  # aider runs its `lint-cmd` after each edit
    # mise trusts a config by its path: a trusted one rewritten runs its hooks at the next `cd`.
    ("mise.toml",): MISE_REASON,
    (".mise.toml",): MISE_REASON,
    ("mise.local.toml",): MISE_REASON,
    (".mise.local.toml",): MISE_REASON,
    (".config", "mise", "config.toml"): MISE_REASON,
    **{
        (name,): SHELL_REASON
        for name in (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv")
    },
}
# Folders whose every file git, a hook manager or ssh runs or obeys.
_FOLDERS: dict[str, str] = {
    ".git": GIT_REASON,
    ".husky": HOOK_REASON,
    ".ssh": SHELL_REASON,
    # Agents' folders whose files name MCP servers, hooks or plugins (OpenCode's run
    # in-process), JetBrains' run configurations and startup tasks, mise's config folders.
    ".opencode": AGENT_REASON,
    ".kiro": AGENT_REASON,
    ".continue": AGENT_REASON,
    ".amazonq": AGENT_REASON,
    ".clinerules": AGENT_REASON,
    ".idea": EDITOR_REASON,
    ".mise": MISE_REASON,
}


def protected_reason(*paths: PurePath, own: tuple[PurePath, ...] = ()) -> str | None:
    """Why writing any of these paths leaves the sandbox, or None when none is protected.
    `own`: the agent's home folders (config, keys, memory, sessions)."""
    for path in paths:
        if any(path == home or path.is_relative_to(home) for home in own):
            return OWN_REASON
        # Case folded: macOS and Windows file systems read `.GIT/config` as `.git/config`.
        parts = tuple(part.lower() for part in path.parts)
        for folder, why in _FOLDERS.items():
            if folder in parts[:-1] or parts[-1:] == (folder,):
                return why
        for length in (1, 2, 3):
            if reason := _FILES.get(parts[-length:]):
                return reason
    return None


def lexical(path: str, cwd: PurePath) -> PurePath:
    """The path made absolute with `..` folded by name, symlinks not followed."""
    raw = os.path.expanduser(path)
    return PurePath(os.path.normpath(os.path.join(cwd, raw)))
