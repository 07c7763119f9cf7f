"""Which toolchain caches a command line can use, read from its parse: each cache overlay
costs a mount (and a file system sync at unmount) per command, so only the caches a
command's programs write get one.

- Every program is a known utility that builds nothing (`ls`, `grep`, `git status`, ...):
  no overlay; the caches stay read-only (the home's read-only view, or a read-only bind).
- Known toolchain programs (`pip`, `npm`, `cargo`, `go`, ...): their own caches' overlays,
  plus any cache the user added to `sandbox_caches` (we cannot tell who uses that one).
- Anything else (a script, `make`, `python3 x.py`, code handed to a shell we cannot read,
  a program found in the workspace, a git command that will run a hook): all overlays.

A wrong guess can only make a cache read-only for a command that wanted to write it: the
write fails, nothing outside the sandbox changes. That is why the lists are short and a
doubt means "all".
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from hermes_core.fence.gitignore import read_regular
from hermes_core.sandbox.file_memo import read_through
from hermes_core.shell.invocation import Invocation
from hermes_core.shell.parse import parse_command
from hermes_core.shell.programs import Unreadable, walk_invocations
from hermes_core.shell.tokens import ShellSyntaxError


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ALL: None = None  # every cache's overlay
CacheNeed = frozenset[str] | None  # the default caches (as in DEFAULT_CACHES) a command writes; None: all

# Programs that never write a toolchain cache (nor start one that would). Shell builtins
# included: `cd`, `echo`, `test` run in bash itself.
UTILITIES = _words(
    "ls cat head tail wc echo printf true false test [ pwd which type command cd pushd popd "
    "grep egrep fgrep rg ag sed awk gawk mawk cut tr sort uniq comm join paste column fold "
    "find fd stat file du df diff cmp patch tee touch mkdir rmdir rm cp mv ln chmod readlink "
    "realpath basename dirname date sleep env export unset set exit read tree less more nl "
    "od xxd hexdump md5sum sha1sum sha256sum sha512sum base64 seq yes tac rev expr jq yq "
    "tar gzip gunzip zcat bzip2 xz unzip zip whoami id uname hostname nproc free uptime ps "
    "kill git for [[ : local declare return shift wait trap"
)
# bash's builtins and keywords among them: run by bash itself, never looked up on PATH
# (`enable -n` and `hash -p`, which would change that, are not utilities).
BUILTINS = _words(
    "echo printf true false test [ pwd type command cd pushd popd export unset set exit read "
    "kill for [[ : local declare return shift wait trap"
)
# Wrappers `unwrap` takes off: the program they run is judged instead.
_WRAPPERS = _words("env nohup time nice timeout stdbuf xargs command builtin exec")

_PYTHON_CACHES = frozenset({"~/.cache"})  # pip, uv, poetry, pdm, hatch, pipenv
_JS_CACHES = frozenset(
    # an install's scripts may call another package manager (`npx only-allow pnpm`);
    # node-gyp, yarn 1 and browser downloads use ~/.cache
    {"~/.npm", "~/.yarn", "~/.local/share/pnpm", "~/.bun/install/cache", "~/.cache"}
)
TOOLCHAINS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("pip", "pip3", "uv", "uvx", "pipx", "poetry", "pdm", "hatch", "pipenv"), _PYTHON_CACHES),
    **dict.fromkeys(("npm", "npx", "pnpm", "pnpx", "yarn", "bun", "bunx"), _JS_CACHES),
    "cargo": frozenset({"~/.cargo/registry", "~/.cargo/git"}),
    "go": frozenset({"~/go/pkg/mod", "~/.cache"}),  # ~/.cache/go-build
    "gradle": frozenset({"~/.gradle", "~/.m2/repository"}),
    "mvn": frozenset({"~/.m2/repository"}),
    "dotnet": frozenset({"~/.nuget/packages"}),
    "nuget": frozenset({"~/.nuget/packages"}),
}
_JS_MANAGERS = frozenset(("npm", "pnpm", "yarn", "bun"))
# What a JS package manager does itself; any other word names a package.json script.
_JS_PLAIN = _words(
    "install i ci add remove rm uninstall un update up upgrade outdated audit init info view "
    "list ls why cache config pack publish version dedupe prune link unlink login logout whoami"
)
# Subcommands of the other toolchains that run the project's code: `cargo run`, `go test`.
_RUNS_CODE = _words("run run-script test t bench exec x dlx generate start")
_PYTHON_MODULES = {"pip": _PYTHON_CACHES, "uv": _PYTHON_CACHES}  # `python3 -m pip`

# git subcommands that run no hook and no helper of the repository's: a utility.
_GIT_PLAIN = _words(
    "status diff log show add rm mv branch tag stash reset restore rev-parse rev-list "
    "ls-files ls-tree cat-file blame grep describe reflog shortlog show-ref for-each-ref "
    "diff-tree diff-index diff-files hash-object write-tree update-index symbolic-ref "
    "check-ignore check-attr var version help init clean archive apply format-patch "
    "range-diff name-rev merge-base cherry count-objects fsck"
)
# ... and those that may run a hook (commit, merge, checkout, ...): a utility only when the
# repository has no hook to run. What talks to a remote (fetch, pull, push, clone: helpers,
# credential caches) is not judged: every cache.
_GIT_HOOKED = _words("commit merge checkout switch rebase cherry-pick revert am")
# Variables that change which code a known name runs.
_RELOCATING = ("PATH=", "LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "PYTHONPATH", "NODE_OPTIONS")
MAX_CONFIG_BYTES = 1 << 22  # a git config read for `hooksPath`; a larger one counts as naming one
# `git -c key=value`: keys that run nothing.
_GIT_SAFE_KEYS = ("user.", "color.", "advice.", "core.quotepath", "init.defaultbranch", "safe.directory")


def cache_need(
    command: str, *, cwd: Path, home: Path, search_path: str | None, workspace: list[Path]
) -> CacheNeed:
    """The caches `command` (a bash command line run in `cwd`) may write; None for all.
    `search_path` is the command's PATH and `workspace` the places it can write: a program
    found there is the workspace's own code, which may do anything."""
    programs = _programs(command)
    if programs is None:
        return ALL
    need: set[str] = set()
    moves = any(program in ("cd", "pushd") for program, _ in programs)  # to another repository?
    if any(hooked for _, hooked in programs) and (moves or _git_hooks(cwd, home)):
        return ALL
    # Each name is looked up once (`git add && git commit && git status`), and a bash
    # builtin never: bash runs its own `echo` whatever file PATH holds by that name.
    for program in dict.fromkeys(program for program, _ in programs):
        if program not in BUILTINS and _found_in(program, search_path, cwd, workspace):
            return ALL
        need |= TOOLCHAINS.get(program, frozenset())
    return frozenset(need)


@functools.lru_cache(maxsize=512)
def _programs(command: str) -> tuple[tuple[str, bool], ...] | None:
    """(program, runs git hooks) for every program the line runs; None when one of them may
    write any cache (or the line cannot be read). Depends only on the text: cached."""
    if any(name in command for name in _RELOCATING):
        return None  # `PATH=./bin:$PATH npm …`: where a name is found is not the agent's PATH
    try:
        script = parse_command(command)
    except ShellSyntaxError:
        return None
    out: list[tuple[str, bool]] = []
    try:
        for invocation, handed_code in walk_invocations(script, strict=True):
            judged = _judge(invocation, handed_on=handed_code)
            if judged is None:
                return None
            if judged:
                out.append(judged)
    except Unreadable:
        return None  # a part that cannot be read may run anything
    return tuple(out)


def _judge(invocation: Invocation, *, handed_on: bool) -> tuple[str, bool] | tuple[()] | None:
    """(program, runs git hooks); () for a wrapper or shell whose inner command is judged
    on its own; None when it may write any cache."""
    first = invocation.words[0]
    if not first.literal or "/" in first.text:
        return None  # `$TOOL`, `./build.sh`, `/opt/x/bin/npm`: not a name we know
    program = invocation.program
    if program in _WRAPPERS:
        return ()
    if program in ("sh", "bash", "dash", "zsh") and handed_on:
        return ()  # `bash -c '…'`: the code it was handed is judged
    if program == "git":
        return _judge_git(invocation)
    if program in UTILITIES:
        return (program, False)
    if program in TOOLCHAINS:
        return None if _runs_project_code(program, invocation.args) else (program, False)
    if program.startswith("python") and _python_module(invocation) in _PYTHON_MODULES:
        return ("pip", False)
    return None


def _judge_git(invocation: Invocation) -> tuple[str, bool] | None:
    args = list(invocation.args)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-c" and i + 1 < len(args) and args[i + 1].lower().startswith(_GIT_SAFE_KEYS):
            i += 2
            continue
        if args[i] in ("--no-pager", "--no-optional-locks", "-P", "--bare"):
            i += 1
            continue
        return None  # -C, --git-dir, --work-tree, -c core.fsmonitor=…: elsewhere, or runs something
    if i >= len(args):
        return ("git", False)
    sub = args[i]
    if sub in _GIT_PLAIN:
        return ("git", False)
    if sub in _GIT_HOOKED:
        return ("git", True)
    return None  # an alias, `submodule`, `fetch` (helpers), `gc` (a hook), an unknown one


def _runs_project_code(program: str, args: tuple[str, ...]) -> bool:
    """`npm test`, `yarn build`, `cargo run`, `go generate`: the project's own scripts or
    programs, which may do anything (an unknown program, so every cache)."""
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub is None:
        return False  # `yarn` alone installs; `--version`
    if program in _JS_MANAGERS:
        return sub not in _JS_PLAIN  # `yarn build`, `pnpm lint`: a package.json script
    return sub in _RUNS_CODE


def _python_module(invocation: Invocation) -> str | None:
    args = invocation.args
    for i, arg in enumerate(args[:-1]):
        if arg == "-m":
            return args[i + 1]
        if not arg.startswith("-"):
            return None
    return None


def _found_in(program: str, search_path: str | None, cwd: Path, workspace: list[Path]) -> bool:
    """Whether bash would run `program` from a file inside the workspace."""
    for entry in (search_path or os.defpath).split(os.pathsep):
        folder = entry if entry and os.path.isabs(entry) else os.path.join(cwd, entry)
        candidate = os.path.join(folder, program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            text = os.path.realpath(candidate)
            return any(text == str(w) or text.startswith(str(w) + os.sep) for w in workspace)
    return False


def _git_hooks(cwd: Path, home: Path) -> bool:
    """Whether git in `cwd` may run a hook: the repository's hooks folder holds one, or a
    config names a hooks folder. In doubt (a `.git` file, no repository found), yes."""
    for folder in (cwd, *cwd.parents):
        dotgit = folder / ".git"
        if os.path.isdir(dotgit) and not os.path.islink(dotgit):
            break
        if os.path.lexists(dotgit):
            return True  # a worktree or submodule: its hooks live elsewhere
    else:
        return True
    try:
        names = os.listdir(dotgit / "hooks")
    except FileNotFoundError:
        names = []
    except OSError:
        return True
    if any(not name.endswith(".sample") for name in names):
        return True
    configs = [
        dotgit / "config",
        home / ".gitconfig",
        home / ".config" / "git" / "config",
        Path("/etc/gitconfig"),
    ]
    configs += [
        Path(os.environ[name]) for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM") if os.environ.get(name)
    ]
    if os.environ.get("XDG_CONFIG_HOME"):
        configs.append(Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "config")
    return any(_names_hooks_path(config) for config in configs)


def _names_hooks_path(config: Path) -> bool:
    """`core.hooksPath`, or an include that might set it (not followed: in doubt, yes).
    Read again only when the file changed (`file_memo`)."""
    return read_through(str(config), _reads_hooks_path)


def _reads_hooks_path(config: str) -> bool:
    data = read_regular(config, MAX_CONFIG_BYTES)  # a FIFO planted as a config must not block
    if data is None:
        return False
    if len(data) >= MAX_CONFIG_BYTES:
        return True  # not read to its end: in doubt, yes
    text = data.decode("utf-8", errors="replace").lower()
    return "hookspath" in text or "include" in text
