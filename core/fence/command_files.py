"""What an "always" answer for a command outside the sandbox can be bound to.

Outside the sandbox a command runs with everything the user has. When it runs a file of
the workspace (`python3 build.py`, `sh x.sh`, `./script`, `node a.js`, `make` and its
Makefile) the user approved that file as it was: the model may rewrite it a moment later,
unasked, in auto. So the "always" is bound to the content of the files the command runs,
and a changed file asks again. Where what runs cannot be pinned down (`npm run`, `cargo`,
`pytest`, `python -m`, inline code that may import the workspace, a program we do not
know, a `cd` before a relative script, `make`, whose recipes run whatever the workspace
holds), no "always" is offered at all: fail closed. Nor where the command sets variables for
what it runs (`GIT_DIR=…`, `PYTHONPATH=…`, `export …`), or where a program found on PATH is
itself a file of the workspace (an activated `.venv/bin`, a `node_modules/.bin` entry): a
sandboxed command may replace it, or the packages beside it, unasked.

What the binding covers: the script, and for an interpreter the files with the script's
suffix beside it (what `import helpers` or `require('./x')` loads from the same folder)
and, for Python, every module of a package folder beside it (`from tools import helper`);
for git, the config and hooks of the repository it works on (`-C dir` followed; `--git-dir`
and `--work-tree` are not pinned); inside the workspace or not (a sandboxed command may write
a cache). What it does not: modules elsewhere (a `sys.path` the script extends itself).

The parts: the digest of the files (`binding_digest`), what git runs code from
(`git_code_files`), programs PATH finds in the workspace (`workspace_programs`), and the
environment of a command run outside (`unconfined_env`).
"""

from __future__ import annotations

import os
from pathlib import Path

from hermes_core.command_rules.hidden_code import code_argument, script_operand
from hermes_core.command_rules.words import names
from hermes_core.fence.binding_digest import Binding, digest
from hermes_core.fence.git_code_files import git_files
from hermes_core.fence.gitignore import read_regular
from hermes_core.fence.inert_options import steered_beyond_its_words
from hermes_core.fence.named_paths import names_beyond_workspace
from hermes_core.fence.unconfined_env import unconfined_environment
from hermes_core.fence.version_files import is_shim, version_files
from hermes_core.fence.workspace_programs import found_in_workspace, workspace_programs
from hermes_core.shell.parse import CommandLine, Script, simple_commands
from hermes_core.shell.programs import (
    ASSIGNMENT,
    WRAPPERS,
    Invocation,
    all_invocations,
    interpreter_family,
    reads_code_from_stdin,
)
from hermes_core.shell.tokens import ShellSyntaxError

MAX_SIBLINGS = 200  # more files than this beside a script: too many to pin, no "always"

# Programs that run nothing of the workspace's: an "always" for them needs no binding.
# Anything not listed that runs unconfined gets no "always" unless its file is pinned.
INERT_PROGRAMS = names(
    "ls cat head tail wc grep egrep fgrep echo printf pwd which type whereis date uname whoami id "
    "hostname df du free uptime ps pgrep pkill kill lsof ss netstat ip stat file uniq cut tr diff "
    "cmp comm tee mkdir rmdir rm cp mv ln touch chmod chown gzip gunzip xz unxz bzip2 zstd curl "
    "wget ping dig nslookup host jq basename dirname realpath readlink true false sleep test [ tree "
    "cd pushd popd export unset"
)
# Build runners whose recipes run workspace files no binding can name (`make test` runs
# `./scripts/check.sh`, pytest and the binaries it just built): like `npm run`, never pinned.
_RECIPE_RUNNERS = names("make gmake")
_DIRECTORY_CHANGES = names("cd pushd popd")
# Programs that may make links (or put another file in a name's place) that a later part of
# the same command line then opens.
_FILE_MAKERS = names("cp mv ln install tar unzip rsync cpio git patch")
# What an interpreter loads from beside its script (`import helpers`, `require('./x')`).
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyc", ".pyw", ".so", ".pyd"),
    "node": (".js", ".mjs", ".cjs", ".ts", ".json", ".node"),
    "shell": (".sh", ".bash"),
    "ruby": (".rb",),
    "perl": (".pl", ".pm"),
    "php": (".php",),
}
# Interpreters for which a folder beside the script is a module (`helpers/__init__.py`,
# `x/index.js`): a new one may take the place of a bound file.
_PACKAGE_FOLDERS = frozenset({"python", "node"})
# Programs that set variables for what runs after them in the same command line.
_EXPORTERS = names("export declare typeset readonly local env")


def binding(command: str | CommandLine, cwd: Path, roots: tuple[Path, ...] = ()) -> Binding | None:
    """The files of the workspace `command` runs and their content now, or None when what
    it runs cannot be pinned down (then no "always" is offered), or when, given the
    workspace's `roots`, it names a file elsewhere, a secret or a git config
    (`named_paths`: outside the sandbox nothing is hidden)."""
    try:
        script = CommandLine.of(command).parsed()
    except ShellSyntaxError:
        return None
    if roots and names_beyond_workspace(script, cwd, roots):
        return None  # `cat ~/.ssh/id_ed25519` under an "always" given for `cat README.md`
    if _sets_variables(script):
        return None  # `GIT_DIR=x git status`, `PYTHONPATH=lib python3 build.py`: not what was bound
    invocations = list(all_invocations(script))
    if any(inv.program in _FILE_MAKERS for inv in invocations[:-1]):
        # `cp -a sub copy && cat copy/notes.md`: the later part opens what the earlier one
        # made, a link `sub` holds (to the key) included; no check before the line sees it.
        return None
    moves = any(inv.program in _DIRECTORY_CHANGES for inv in invocations)
    files: dict[Path, None] = {}
    for inv in invocations:
        ran = _files_run(inv, cwd)
        if ran is None:
            return None
        if ran and moves:
            return None  # `cd sub && make`: which Makefile runs depends on where cd went
        # Files outside the workspace too: a sandboxed command may write some of them (caches).
        for path in ran:
            files[path] = None
        if "/" not in inv.words[0].text and is_shim(inv.words[0].text):
            files.update(dict.fromkeys(version_files(cwd)))  # `.tool-versions` picks what runs
    return digest(sorted(files), cwd)


def _files_run(inv: Invocation, cwd: Path, depth: int = 0) -> list[Path] | None:
    """The files this invocation runs ([] for none), or None when they cannot be named.
    `depth`: how many shell scripts deep this invocation is (`_script_files`)."""
    if not inv.words[0].literal or inv.fed:
        return None  # `xargs cat < list.txt`: what it names is in a file the sandbox may rewrite
    program_word = inv.words[0].text
    if "/" not in program_word and found_in_workspace(program_word, cwd):
        return None  # `python3` is `.venv/bin/python3`: its site-packages are the workspace's
    if inv.program in WRAPPERS:
        return []  # `env`, `nice`, `timeout` …: what they run is an invocation of its own
    if inv.program in ("source", "."):
        operands = [w for w in inv.words[1:] if not w.text.startswith("-")]
        if not operands or not operands[0].literal:
            return None
        return _with_siblings(_absolute(operands[0].text, cwd), "shell", cwd, depth)  # judged as run
    family, code = code_argument(inv)
    if family is not None:
        if code is not None and family == "shell":
            return []  # `bash -c '…'`: its commands are among the invocations, each judged
        if code is not None or reads_code_from_stdin(inv):
            return None  # inline or piped code: it may load anything from the workspace
        operand = script_operand(inv)
        if operand is None or not operand.literal:
            return None  # `python -m pkg`: which file that is depends on sys.path
        return _with_siblings(_absolute(operand.text, cwd), family, cwd, depth)
    if inv.program in _RECIPE_RUNNERS:
        return None
    if inv.program == "git":
        return git_files(inv, cwd)
    if "/" in program_word:
        path = _absolute(program_word, cwd)
        if not path.is_relative_to(cwd):
            # `/usr/bin/ls` runs nothing of the workspace's. `/usr/bin/npm install` or
            # `~/.cargo/bin/cargo build` do: what runs is the workspace's package.json
            # scripts, build.rs, `.npmrc` or `.cargo/config.toml`, not the program's own
            # file, so pinning that file pins nothing (as for `npm` found on PATH).
            inert = inv.program in INERT_PROGRAMS and not steered_beyond_its_words(inv, cwd)
            return [] if inert else None  # `/usr/bin/curl -K fetch.cfg` as `curl -K` by name
        # `./build.py` runs what `python3 build.py` runs: its shebang's interpreter imports
        # the files beside it.
        return _with_siblings(path, _shebang_family(path), cwd, depth)
    if inv.program in INERT_PROGRAMS:
        return None if steered_beyond_its_words(inv, cwd) else []
    return None


def _with_siblings(script: Path, family: str | None, cwd: Path, depth: int = 0) -> list[Path] | None:
    """The script and what its interpreter may load from beside it: the files with its
    suffix or one the interpreter loads (`helpers.py`, and `helpers.so` or a `helpers/`
    package, which Python prefers to it: `_package_files`; `__pycache__` is not read
    outside the sandbox: `unconfined_environment`). None when too many to pin, or
    when Node would load packages from a `node_modules` of the workspace (`npm install`
    changes them in the sandbox, unasked)."""
    if family == "node" and _workspace_node_modules(script, cwd):
        return None
    wanted = {suffix for suffix in (script.suffix, *_SUFFIXES.get(family or "", ())) if suffix}
    if not wanted:
        return [script]
    try:
        loadable: list[Path] = []
        for entry in script.parent.iterdir():
            if entry == script:
                continue
            if entry.suffix in wanted and entry.is_file():
                loadable.append(entry)
            elif family in _PACKAGE_FOLDERS and entry.is_dir():
                package = _package_files(entry, family)
                if package is None:
                    return None
                loadable += package
    except OSError:
        return None
    if len(loadable) > MAX_SIBLINGS:
        return None
    if family == "shell":
        inside = _script_files(script, cwd, depth)
        if inside is None:
            return None
        loadable += inside
    return [script, *loadable]


MAX_SCRIPT_BYTES = 64 * 1024
_MAX_SCRIPT_DEPTH = 3


def _script_files(script: Path, cwd: Path, depth: int) -> list[Path] | None:
    """What a shell script runs, judged as its command line is: pinning `./gradlew` pinned
    nothing of what it runs (it execs `$JAVACMD` with the workspace's wrapper jar, which
    downloads the distribution its properties name and runs `build.gradle`), nor a
    `build.sh` that runs `npm install` (package.json's scripts). A script that runs only
    what can be pinned is bound with those files; any other gets no "always"."""
    if depth >= _MAX_SCRIPT_DEPTH:
        return None
    data = read_regular(str(script), MAX_SCRIPT_BYTES + 1)
    if data is None:
        return []  # absent (or no regular file): bound as such, and one made later asks
    if len(data) > MAX_SCRIPT_BYTES:
        return None
    try:
        parsed = CommandLine.of(data.decode("utf-8")).parsed()
    except (ShellSyntaxError, UnicodeDecodeError):
        return None
    if _sets_variables(parsed):
        return None  # `export PYTHONPATH=lib`, `JAVACMD=…`: what runs after depends on it
    invocations = list(all_invocations(parsed))
    moves = any(inv.program in _DIRECTORY_CHANGES for inv in invocations)
    files: list[Path] = []
    for inv in invocations:
        ran = _files_run(inv, cwd, depth + 1)
        if ran is None or (ran and moves):
            return None
        files += ran
    return files


MAX_PACKAGE_ENTRIES = 5_000  # entries looked at in the folders beside a script, at most


def _package_files(
    folder: Path, family: str | None, budget: int = MAX_SIBLINGS, seen: list[int] | None = None
) -> list[Path] | None:
    """What the interpreter may load from `folder` beside the script: for Python every
    module of the package it is (a folder named like a module, `__init__` or not: `from
    tools import helper` runs `tools/helper.py`, and a namespace package needs no
    `__init__`), subpackages included; for Node every script of the folder and the folders
    in it (`require('./lib')` loads `lib/index.js`, `require('./lib/x')` `lib/x.js`: a
    folder's digest was a constant, so neither was bound). None when it cannot be pinned: more than
    `budget` files, a folder inside that is a link (it may lead anywhere, or loop), or a
    tree too large to read at an approval (`MAX_PACKAGE_ENTRIES`; `seen` counts them)."""
    if family == "node" and folder.name.startswith("."):
        return []
    if family == "python" and (
        not folder.name.isidentifier() or folder.name == "__pycache__" or (folder / "pyvenv.cfg").exists()
    ):
        # `.pytest_cache`, `build-output`, a venv: no `import` names them; `__pycache__`
        # is not read outside the sandbox (`unconfined_environment`)
        return []
    seen = seen if seen is not None else [0]
    found: list[Path] = []
    for entry in folder.iterdir():
        seen[0] += 1
        if seen[0] > MAX_PACKAGE_ENTRIES:
            return None
        if entry.suffix in _SUFFIXES[family or ""] and entry.is_file():
            found.append(entry)
        elif entry.is_dir():
            inner = None if entry.is_symlink() else _package_files(entry, family, budget - len(found), seen)
            if inner is None:
                return None
            found += inner
        if len(found) > budget:
            return None
    return found


def _workspace_node_modules(script: Path, cwd: Path) -> bool:
    """Whether a folder Node looks in for packages (`node_modules` beside the script or
    above it) lies in the workspace."""
    return any((folder / "node_modules").exists() for folder in script.parents if folder.is_relative_to(cwd))


def _shebang_family(path: Path) -> str | None:
    """The interpreter family a script's `#!` line names (`#!/usr/bin/env python3`)."""
    data = read_regular(str(path), 256)  # a FIFO must not block the approval
    if data is None:
        return None
    first = data.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return interpreter_family(words[0].rsplit("/", 1)[-1]) if words else None


def _sets_variables(script: Script) -> bool:
    """Whether the command line sets a variable for a program it runs: a prefix assignment
    (`X=1 prog`), or `export`, `env`, `declare` … with one."""
    for command in simple_commands(script):
        words = command.words
        if words and ASSIGNMENT.match(words[0].text):
            return True
        if words and words[0].text in _EXPORTERS and any(ASSIGNMENT.match(w.text) for w in words[1:]):
            return True
    return False


def _absolute(raw: str, cwd: Path) -> Path:
    return Path(os.path.normpath(os.path.join(cwd, os.path.expanduser(raw))))


__all__ = ["Binding", "binding", "unconfined_environment", "workspace_programs"]
