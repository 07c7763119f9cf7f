"""Dangerous-command rules, and what an "allow always" for a command covers.

Each rule is a description the user sees and a test on one invocation. `dangerous_rule`
applies them to every program a command may run: each part of a chain or pipeline,
subshells, substitutions, wrapped commands (`sudo`, `env`, `xargs`, `nohup`, …) and code
handed to a shell (`bash -c`, `eval`, here-documents). A few rules look at more than one
program (a download piped into a shell) or at redirections, and are applied there.

`command_scope` is the other question asked of a command: how far an "always" answer for
it may reach.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from core.fail_closed import (
    FAIL_CLOSED_RULES,
    RISKY_PROGRAMS,
    inline_code_unseen,
    interpreter_stdin_unseen,
    rm_flags,
    script_operand,
    variable_code,
)
from core.git_rules import git_rule
from core.rule_words import WORKSPACE_ROOTS, outside
from core.rule_words import computed_or_outside as _computed_or_outside
from core.shell.parse import (
    Pipeline,
    Script,
    SimpleCommand,
    Subshell,
    parse_command,
    parse_or_empty,
    simple_commands,
)
from core.shell.programs import (
    ASSIGNMENT,
    CODE_OPTIONS,
    EXEC_ACTIONS,
    INTERPRETER_CODE_FLAGS,
    KEYWORDS,
    MAX_NESTING,
    WRAPPERS,
    Invocation,
    Nested,
    after_options,
    all_invocations,
    interpreter_family,
    reads_code_from_stdin,
    unwrap,
    unwrapped,
)
from core.shell.words import Redirect, ShellSyntaxError, ShellTooDeep, Word

# --------------------------------------------------------------------------------------
# Dangerous-command rules


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})
_SYSTEM_DIRS = _names(
    "/bin /boot /dev /etc /home /lib /lib32 /lib64 /libx32 /media /mnt /opt /proc /root /run /sbin "
    "/snap /srv /sys /tmp /usr /var /System /Library /Applications /Users /Volumes /private"
)
_HOMES = re.compile(r"~[\w.-]*|\$HOME|\$\{HOME\}|/(home|Users)/[^/]+")
_EMPTY_VAR_SLASH = re.compile(r"\$\{?\w+\}?/\*?")  # `$DIR/` is `/` when DIR is empty
_DISK_DEVICE = re.compile(r"/dev/([shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/)")
_SYSTEM_FILE = re.compile(r"/(etc|boot|usr|bin|sbin|lib|lib64|sys|proc/sys|System)(/|$)")
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
_ELEVATORS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*?\1\s*\|\s*&?\s*\1[^}]*\}")

FORK_BOMB = "fork bomb"
DOWNLOAD_RUN = "runs a downloaded script (curl … | sh)"
DISK_WRITE = "writes to a disk device (> /dev/sd…)"
SYSTEM_WRITE = "writes to a system path (/etc, /boot, /usr, …)"
UNPARSEABLE = "could not parse the command"
TOO_DEEP = "command nested too deeply to check"


def _normal_path(raw: str) -> str:
    """`/usr/` -> `/usr`, `/*` -> `/`, `~/` -> `~`, `./*` -> `.`, `src/..` -> `.`."""
    if not raw:
        return raw
    path = re.sub(r"^/+", "/", raw)
    while True:
        path = posixpath.normpath(path)
        if path.endswith(("/*", "/.*")):
            path = path[: path.rindex("/")] or "/"
            continue
        return path


def _broad_system_path(raw: str) -> bool:
    """The root, a home directory or a top-level system directory."""
    path = _normal_path(raw)
    return path == "/" or path in _SYSTEM_DIRS or bool(_HOMES.fullmatch(path))


def _broad_path(raw: str) -> bool:
    """A broad system path, or the whole working directory or its parents."""
    if _broad_system_path(raw) or _EMPTY_VAR_SLASH.fullmatch(raw):
        return True
    path = _normal_path(raw)
    return path in (".", "*", ".*") or bool(re.fullmatch(r"\.\.(/\.\.)*", path))


def _short_flags(text: str) -> str:
    """The letters of a short-option cluster (`-rf` -> `rf`), or "" for anything else."""
    return text[1:] if text.startswith("-") and not text.startswith("--") and len(text) > 1 else ""


def _split_options(args: Iterable[str]) -> tuple[list[str], list[str]]:
    """Options and operands; everything after `--` is an operand."""
    options: list[str] = []
    operands: list[str] = []
    args = list(args)
    for i, text in enumerate(args):
        if text == "--":
            operands.extend(args[i + 1 :])
            break
        (options if text.startswith("-") and text != "-" else operands).append(text)
    return options, operands


def _rm_broad(inv: Invocation) -> bool:
    if inv.program not in ("rm", "rimraf"):
        return False
    _, operands = _split_options(inv.args)
    recursive = inv.program == "rimraf" or "r" in rm_flags(inv)
    return recursive and any(_broad_path(p) for p in operands)


def _rm_no_preserve_root(inv: Invocation) -> bool:
    return inv.program == "rm" and "no-preserve-root" in rm_flags(inv)


def _makes_filesystem(inv: Invocation) -> bool:
    return inv.program.startswith("mkfs") or inv.program in ("mke2fs", "mkswap", "newfs")


def _partitions(inv: Invocation) -> bool:
    return inv.program in ("fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted")


def _wipes(inv: Invocation) -> bool:
    return inv.program in ("wipefs", "shred") and any(a.startswith("/dev/") for a in inv.args)


def _device(path: str) -> bool:
    return path.startswith("/dev/") and path not in _HARMLESS_DEVICES and not path.startswith("/dev/fd/")


def _dd_to_device(inv: Invocation) -> bool:
    return inv.program == "dd" and any(a.startswith("of=") and _device(a[3:]) for a in inv.args)


def _tee_targets(inv: Invocation) -> list[str]:
    return _split_options(inv.args)[1] if inv.program == "tee" else []


def _tee_to_disk(inv: Invocation) -> bool:
    return any(_DISK_DEVICE.match(t) for t in _tee_targets(inv))


def _tee_to_system(inv: Invocation) -> bool:
    return any(_SYSTEM_FILE.match(t) for t in _tee_targets(inv))


def _world_writable(mode: str) -> bool:
    for part in mode.split(","):
        if re.fullmatch(r"0*[0-7]{3,4}", part) and int(part[-1]) & 2:
            return True
        if re.fullmatch(r"[ugoa]*[ao][ugoa]*[+=][rwxXst]*w[rwxXst]*", part):
            return True
    return False


def _ownership_recursive(inv: Invocation) -> tuple[bool, list[str]]:
    """Whether a chmod/chown/chgrp is recursive, and its operands."""
    recursive = False
    operands: list[str] = []
    for text in inv.args:
        flags = _short_flags(text)
        if text == "--recursive" or (flags and re.fullmatch(r"[RcfvHLP]+", flags) and "R" in flags):
            recursive = True
        elif not (text.startswith("--") or (flags and re.fullmatch(r"[RcfvHLP]+", flags))):
            operands.append(text)  # chmod modes like -w are operands, not options
    return recursive, operands


def _chmod_dangerous(inv: Invocation) -> bool:
    if inv.program != "chmod":
        return False
    recursive, operands = _ownership_recursive(inv)
    if not operands:
        return False
    mode, targets = operands[0], operands[1:]
    open_to_all = _world_writable(mode)
    return (recursive and open_to_all) or (
        (recursive or open_to_all) and any(_broad_system_path(t) for t in targets)
    )


def _chown_dangerous(inv: Invocation) -> bool:
    if inv.program not in ("chown", "chgrp"):
        return False
    recursive, operands = _ownership_recursive(inv)
    return recursive and any(_broad_system_path(t) for t in operands[1:])


def _downloads(word: Word) -> bool:
    """Whether the word's substitutions fetch something from the network."""
    return any(
        inv.program in _DOWNLOADERS for sub in word.subs for inv in all_invocations(parse_or_empty(sub))
    )


def _runs_download(inv: Invocation) -> bool:
    """`bash <(curl …)`, `sh -c "$(curl …)"`, `eval "$(wget -O- …)"`, `$(curl …)`."""
    if _downloads(inv.words[0]):
        return True
    runs_code = interpreter_family(inv.program) is not None or inv.program in ("eval", "source", ".")
    return runs_code and any(_downloads(w) for w in inv.words[1:])


def _subcommand_at(program: str, args: Sequence[str]) -> int:
    """Where the subcommand is: past the leading options (and the values of git's `-C dir`)."""
    value_options = _GIT_VALUE_OPTIONS if program == "git" else frozenset()
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in value_options else 1
    return i


def _git_subcommand(inv: Invocation) -> tuple[str, list[str]]:
    if inv.program != "git":
        return "", []
    args = list(inv.args)
    i = _subcommand_at("git", args)
    return (args[i], args[i + 1 :]) if i < len(args) else ("", [])


def _git_force_push(inv: Invocation) -> bool:
    sub, rest = _git_subcommand(inv)
    if sub != "push":
        return False
    options, operands = _split_options(rest)
    forced = any(
        o in ("--force", "--mirror")
        or (len(o) > 3 and "--force".startswith(o))
        or o.startswith("--force-with-lease")
        or ("f" in _short_flags(o) and not o.startswith("-o"))
        for o in options
    )
    return forced or any(ref.startswith("+") for ref in operands[1:])


def _git_reset_hard(inv: Invocation) -> bool:
    sub, rest = _git_subcommand(inv)
    return sub == "reset" and any(len(o) > 3 and "--hard".startswith(o) for o in rest)


def _git_clean_dirs(inv: Invocation) -> bool:
    sub, rest = _git_subcommand(inv)
    if sub != "clean":
        return False
    letters = set("".join(_short_flags(o) for o in rest))
    letters |= {"f" for o in rest if len(o) > 3 and "--force".startswith(o)}
    letters |= {"n" for o in rest if len(o) > 3 and "--dry-run".startswith(o)}
    return "f" in letters and "n" not in letters and bool(letters & {"d", "x", "X"})


def _elevates(inv: Invocation) -> bool:
    return inv.program in _ELEVATORS


def _powers_off(inv: Invocation) -> bool:
    if inv.program in ("shutdown", "reboot", "halt", "poweroff"):
        return True
    first = _split_options(inv.args)[1][:1]
    if inv.program == "systemctl":
        return first in (["poweroff"], ["reboot"], ["halt"], ["kexec"])
    return inv.program in ("init", "telinit") and first in (["0"], ["6"])


def _kills_everything(inv: Invocation) -> bool:
    if inv.program != "kill":
        return False
    args = list(inv.args)
    if args and args[0] in ("-l", "-L", "--list"):
        return False
    if args and args[0] in ("-s", "-n", "--signal"):
        args = args[2:]
    elif args and args[0].startswith("-") and args[0] != "--":
        args = args[1:]  # the first dash word is the signal: `kill -9 -1`
    if args[:1] == ["--"]:
        args = args[1:]
    return "-1" in args


def _kills_by_name(inv: Invocation) -> bool:
    return inv.program in ("killall", "pkill")


def _find_deletes_broadly(inv: Invocation) -> bool:
    if inv.program != "find":
        return False
    args = list(inv.args)
    i = 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P", "-D") or re.fullmatch(r"-O\d", args[i])):
        i += 2 if args[i] == "-D" else 1
    starts = []
    while i < len(args) and not args[i].startswith(("-", "(", "!", ")")):
        starts.append(args[i])
        i += 1
    removers = ("rm", "shred", "unlink")
    deletes = "-delete" in args or any(
        a in EXEC_ACTIONS and j + 1 < len(args) and args[j + 1].rsplit("/", 1)[-1] in removers
        for j, a in enumerate(args)
    )
    return deletes and any(_broad_system_path(s) for s in starts)


@dataclass(frozen=True, slots=True)
class Rule:
    description: str  # shown to the user: what the command would do
    matches: Callable[[Invocation], bool]


RULES: tuple[Rule, ...] = (
    Rule("recursive delete of a broad path (rm -rf /)", _rm_broad),
    Rule("rm --no-preserve-root", _rm_no_preserve_root),
    Rule("formats a filesystem (mkfs)", _makes_filesystem),
    Rule("partitions a disk (fdisk, parted)", _partitions),
    Rule("wipes a disk (wipefs)", _wipes),
    Rule("writes to a device (dd of=/dev/…)", _dd_to_device),
    Rule(DISK_WRITE, _tee_to_disk),
    Rule(SYSTEM_WRITE, _tee_to_system),
    Rule("recursive or world-writable chmod (chmod -R 777, chmod 777 /)", _chmod_dangerous),
    Rule("recursive chown of a broad path (chown -R … /)", _chown_dangerous),
    Rule(DOWNLOAD_RUN, _runs_download),
    Rule("force push (git push --force)", _git_force_push),
    Rule("discards uncommitted changes (git reset --hard)", _git_reset_hard),
    Rule("deletes untracked files and directories (git clean -fd)", _git_clean_dirs),
    Rule("runs as another user (sudo, doas, su)", _elevates),
    Rule("shuts down or reboots the machine", _powers_off),
    Rule("kills every process (kill -9 -1)", _kills_everything),
    Rule("kills processes by name (killall, pkill)", _kills_by_name),
    Rule("deletes files across a broad path (find / -delete)", _find_deletes_broadly),
)


WRITES_UNSEEN = "writes to a file outside the working directory or named by an expansion (> ~/.bashrc, > $F)"
PIPED_CODE = "runs code piped into an interpreter (… | sh, … | python)"
WRITTEN_THEN_RUN = "runs a file that the same command downloads or writes (curl -o x.sh && sh x.sh)"
_SHELL_COMPUTED = 'runs shell code the shell computes (bash -c "$X", su -c "$X")'


def dangerous_rule(command: str, *, roots: Sequence[str] = ()) -> str | None:
    """The description of the first rule the command hits, or None when it can be shown
    harmless. `roots` are the workspace directories: absolute paths inside them are not
    "outside" (without them, every absolute path but /tmp/… is).

    Fails closed: a command the reader cannot parse, or that nests deeper than it
    follows, counts as dangerous, so it asks in every mode.
    """
    token = WORKSPACE_ROOTS.set(tuple(roots))
    try:
        return _check_source(command, 0)
    except RecursionError:
        return TOO_DEEP
    finally:
        WORKSPACE_ROOTS.reset(token)


def _check_source(source: str, depth: int) -> str | None:
    if depth > MAX_NESTING:
        return TOO_DEEP
    if _FORK_BOMB.search(source):  # a function that pipes itself into itself, in the background
        return FORK_BOMB
    try:
        script = parse_command(source)
    except ShellTooDeep:
        return TOO_DEEP
    except ShellSyntaxError:
        return UNPARSEABLE
    return _check_script(script, depth) or _written_then_run(script) or _works_elsewhere(script)


def _check_script(script: Script, depth: int) -> str | None:
    if depth > MAX_NESTING:
        return TOO_DEEP
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                hit = _check_script(element.body, depth + 1)
            else:
                hit = _check_command(element, depth)
            if hit:
                return hit
        if hit := _check_pipe(pipeline, depth):
            return hit
    return None


def _check_command(command: SimpleCommand, depth: int) -> str | None:
    for sub in command.substitutions():
        if hit := _check_source(sub, depth + 1):
            return hit
    for word in [*command.words, *(r.target for r in command.redirects)]:
        if "prompt" in word.expansions:
            return "expands a variable like a prompt (${x@P} runs the $(…) in its value)"
        if "process" in word.expansions and any(_reads_code(sub) for sub in word.subs):
            return PIPED_CODE  # `> >(sh)`, `tee >(bash)`
    for redirect in command.redirects:
        if redirect.writes:
            if _DISK_DEVICE.match(redirect.target.text):
                return DISK_WRITE
            if _SYSTEM_FILE.match(redirect.target.text):
                return SYSTEM_WRITE
            if _redirect_unseen(redirect):
                return WRITES_UNSEEN
    return _check_words(command.words, command.redirects, depth, unwrapped(command))


def _check_words(
    words: list[Word],
    redirects: list[Redirect],
    depth: int,
    unwrapped: tuple[list[Invocation], list[Nested]] | None = None,
) -> str | None:
    loads_code, variable_commands = variable_code(words)
    if loads_code:
        return "sets a variable that makes programs load other code (LD_PRELOAD, BASH_ENV, GIT_CONFIG_*, …)"
    for code in variable_commands:
        if hit := _check_source(code, depth + 1):
            return hit
    invocations, nested = unwrapped or unwrap(words)
    pending: str | None = None  # a fail-closed hit; a named disaster in nested code says more
    for invocation in invocations:
        for rule in RULES:
            if rule.matches(invocation):
                return rule.description
        pending = pending or _fail_closed(invocation)
    for item in nested:
        if isinstance(item, str):
            hit = _check_source(item, depth + 1)
        else:
            hit = _check_words(list(item), [], depth + 1)
        if hit:
            return hit
    if pending:
        return pending
    if invocations and interpreter_family(invocations[-1].program) == "shell":
        for redirect in redirects:  # `bash <<EOF … EOF`, `sh <<< "…"`
            if redirect.op == "<<<" and not redirect.target.literal:
                return _SHELL_COMPUTED
            code = redirect.target.text if redirect.op == "<<<" else redirect.body
            if code and (hit := _check_source(code, depth + 1)):
                return hit
    if invocations and (hit := interpreter_stdin_unseen(invocations[-1], redirects)):
        return hit
    computed_stdin = any(r.op == "<" and not r.target.literal for r in redirects)
    if computed_stdin and invocations and reads_code_from_stdin(invocations[-1]):
        return PIPED_CODE  # `bash < <(curl …)`, `sh < $F`
    return None


def _reads_code(source: str) -> bool:
    """Whether a process substitution runs what is written into it (`>(sh)`)."""
    return any(reads_code_from_stdin(inv) for inv in all_invocations(parse_or_empty(source)))


def _fail_closed(invocation: Invocation) -> str | None:
    if hit := git_rule(invocation):
        return hit
    if hit := inline_code_unseen(invocation):
        return hit
    if _hands_over_computed_code(invocation):
        return _SHELL_COMPUTED
    for rule in FAIL_CLOSED_RULES:
        if rule.matches(invocation):
            return rule.description
    return None


_CODE_CARRIERS = frozenset({"su", "flock", "script", "ssh", "watch", "trap", "npx", "pnpx", "bunx"})


def _hands_over_computed_code(invocation: Invocation) -> bool:
    """`su -c "$X"`, `watch "$X"`, `ssh host "$X"`, `env -S "$X"`: code that is not visible."""
    words = invocation.words[1:]
    computed = any(not w.literal for w in words)
    if invocation.program == "env":
        return computed and any(w.text.startswith(("-S", "--split")) for w in words)
    if invocation.program in ("npx", "pnpx", "bunx"):
        return computed and any(w.text in ("-c", "--call") or w.text.startswith("--call=") for w in words)
    return computed and invocation.program in _CODE_CARRIERS


def _redirect_unseen(redirect: Redirect) -> bool:
    """Output into a file the command line does not name plainly, or outside."""
    target = redirect.target
    if (redirect.op in (">&", "<>") and target.text.isdigit()) or target.text == "-":
        return False
    return not target.literal or outside(target.text)


def _check_pipe(pipeline: Pipeline, depth: int) -> str | None:
    """`curl … | sh`, `echo "rm -rf /" | sh` (the echoed text is the code), and anything
    else piped into a program that runs what it reads."""
    downloaded = False
    echoed: str | None = None
    for position, element in enumerate(pipeline):
        if isinstance(element, Subshell):
            invocations = list(all_invocations(element.body))
            last = None
        else:
            invocations = unwrapped(element)[0]
            last = invocations[-1] if invocations else None
        if last is not None and position > 0 and reads_code_from_stdin(last):
            if downloaded:
                return DOWNLOAD_RUN
            shell = interpreter_family(last.program) == "shell"
            if echoed and shell and (hit := _check_source(echoed, depth + 1)):
                return hit
            return PIPED_CODE
        downloaded = downloaded or any(inv.program in _DOWNLOADERS for inv in invocations)
        echoed = None
        if last is not None and last.program in ("echo", "printf"):
            echoed = " ".join(_split_options(last.args)[1])
    return None


_WRITERS = frozenset({"tee", "cp", "mv", "install", "ln", "dd", "unzip", "tar"})


def _written_then_run(script: Script) -> str | None:
    """A file the command writes (download, redirect, tee, cp) and also runs, or a tree it
    downloads (`git clone`, `curl … | tar x`) and runs something from: what runs cannot
    be read from the command line. Order does not matter (`sh < fifo & echo … > fifo`)."""
    written: set[str] = set()
    ran: set[str] = set()
    fetched_tree = False
    for pipeline in script:
        simple = list(simple_commands([pipeline]))
        programs = [inv.program for command in simple for inv in unwrapped(command)[0]]
        if any(p in _DOWNLOADERS for p in programs) and any(p in _EXTRACTORS for p in programs):
            fetched_tree = True  # `curl … | tar xz`
        for command in simple:
            invocations = unwrapped(command)[0]
            for redirect in command.redirects:
                if redirect.writes and not redirect.target.text.isdigit():
                    written.add(posixpath.basename(redirect.target.text))
                elif redirect.op == "<" and invocations and reads_code_from_stdin(invocations[-1]):
                    ran.add(posixpath.basename(redirect.target.text))
            for inv in invocations:
                if inv.program in _WRITERS or inv.program in _DOWNLOADERS:  # `-O` names it after the URL
                    operands = (a for a in inv.args if not a.startswith("-"))
                    written.update(posixpath.basename(a.rstrip("/")) for a in operands)
                if inv.program in _EXTRACTORS and any(posixpath.basename(a) in written for a in inv.args):
                    fetched_tree = True
                if inv.program == "git" and set(inv.args[:3]) & {"clone", "pull", "fetch", "submodule"}:
                    fetched_tree = True
                file = _ran_file(inv)
                if file is not None:
                    ran.add(posixpath.basename(file))
                    if fetched_tree and ("/" in file or inv.words[0].text != file):
                        return WRITTEN_THEN_RUN
    if written & ran:
        return WRITTEN_THEN_RUN
    return None


_EXTRACTORS = frozenset({"tar", "bsdtar", "unzip", "7z", "cpio", "gunzip", "bunzip2", "unxz", "zcat"})


_CHANGES_DIRECTORY = frozenset({"cd", "pushd"})
_WORKS_ON_FILES = _names(
    "rm rmdir unlink mv cp ln install rsync chmod chown chgrp shred truncate dd find tee rimraf sed perl "
    "git tar unzip"
)


def _works_elsewhere(script: Script) -> str | None:
    """`cd / && rm -rf usr`: after moving out of the working directory, relative paths
    are outside too."""
    moved = False
    for command in simple_commands(script):
        invocations = unwrapped(command)[0]
        if moved and (
            any(inv.program in _WORKS_ON_FILES for inv in invocations)
            or any(_writes_file(r) for r in command.redirects)
        ):
            return "works on files outside the working directory (cd … && rm …)"
        for inv in invocations:
            words = inv.words
            if inv.program in _CHANGES_DIRECTORY:
                operands = [w for w in words[1:] if not (w.literal and w.text.startswith("-"))]
                target = operands[0] if operands else None
                moved = moved or target is None or _computed_or_outside(target) or words[-1].text == "-"
            elif inv.program in ("env", "sudo"):
                pairs = itertools.pairwise(words[1:])
                chdir = [w for before, w in pairs if before.text in ("-C", "--chdir", "-D")]
                if chdir and _computed_or_outside(chdir[0]):
                    return "works on files outside the working directory (env -C …)"
    return None


def _ran_file(inv: Invocation) -> str | None:
    """The file an invocation runs as code: `./x.sh`, `sh x.sh`, `source x`, `python x.py`."""
    if inv.program in ("source", "."):
        operands = _split_options(inv.args)[1]
        return operands[0] if operands else None
    script = script_operand(inv)
    if script is not None:
        return script.text
    first = inv.words[0].text
    return first if "/" in first else None


# --------------------------------------------------------------------------------------
# What "allow always" covers for a command

# Programs whose first operand is a subcommand: `git status` -> "git status".
_SUBCOMMAND_PROGRAMS = _names(
    "git npm pnpm yarn bun npx pnpx bunx cargo go docker podman kubectl helm pip pip3 uv uvx pipx "
    "poetry pdm hatch conda mamba brew apt apt-get dnf yum pacman systemctl gh dotnet rustup "
    "terraform nix deno bundle gem mix composer rake"
)
# Subcommands that run another program named next: `uv run pytest` -> "uv run pytest".
_RUNNER_SUBCOMMANDS = frozenset(
    {
        ("uv", "run"),
        ("poetry", "run"),
        ("pipenv", "run"),
        ("pdm", "run"),
        ("hatch", "run"),
        ("conda", "run"),
        ("bundle", "exec"),
        ("pnpm", "exec"),
        ("pnpm", "dlx"),
        ("yarn", "dlx"),
        ("pipx", "run"),
    }
)
_DIRECTORY_ONLY = frozenset({"cd", "pushd", "popd"})


def _normalised(command: str) -> str:
    lines = (" ".join(line.split()) for line in command.strip().splitlines())
    return "\n".join(line for line in lines if line)


def _program_scope(invocation: Invocation) -> str | None:
    """The scope of one program run, or None when only the exact command will do."""
    program = invocation.words[0].text
    name = invocation.program
    args = list(invocation.args)
    family = interpreter_family(name)
    if family is not None:
        code_flags = INTERPRETER_CODE_FLAGS[family]
        for i, text in enumerate(args):
            if family == "python" and text == "-m" and i + 1 < len(args):
                return f"{program} -m {args[i + 1]}"
            if set(_short_flags(text)) & set(code_flags) or text in CODE_OPTIONS:
                return None  # inline code: every run is different
            if not text.startswith("-"):
                return f"{program} {text}"  # a script file
        return None  # code from stdin
    if name in _WHOLE_COMMAND_PROGRAMS:
        return None
    if name not in _SUBCOMMAND_PROGRAMS:
        return _with_marks(program, _destructive_marks(name, args))
    i = _subcommand_at(name, args)
    if i >= len(args):
        return program
    subcommand = args[i]
    rest = args[i + 1 :]
    if (name, subcommand) in _RUNNER_SUBCOMMANDS:
        following = after_options([Word(a) for a in rest], frozenset())
        return f"{program} {subcommand} {following[0].text}" if following else f"{program} {subcommand}"
    scope = f"{program} {subcommand}"
    if subcommand in _GROUP_SUBCOMMANDS.get(name, ()):  # `git stash drop`, `docker system prune`
        operands = [a for a in rest if not a.startswith("-")]
        scope = f"{scope} {operands[0]}" if operands else scope
    return _with_marks(scope, _destructive_marks(f"{name} {subcommand}", rest))


# "Always" for a program never covers its destructive options: `rm -r` and `git push -d`
# have scopes of their own. Per program (or program and subcommand), the options that
# make it destructive, as short letters and long names (any unambiguous prefix counts).
_DESTRUCTIVE_OPTIONS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    # key: (mark, short letters, long options) — the mark names them all in the scope
    "chmod": (("-R", "R", ("--recursive",)),),
    "chown": (("-R", "R", ("--recursive",)),),
    "chgrp": (("-R", "R", ("--recursive",)),),
    "sed": (("-i", "i", ("--in-place",)),),
    "perl": (("-i", "i", ()),),
    "mv": (("-f", "f", ("--force",)),),
    "cp": (("-f", "f", ("--force", "--remove-destination")),),
    "ln": (("-f", "f", ("--force",)),),
    "rsync": (("--delete", "", ("--delete", "--delete-after", "--delete-before", "--remove-source-files")),),
    "git push": (
        ("-f", "f", ("--force", "--force-with-lease", "--force-if-includes")),
        ("-d", "d", ("--delete",)),
        ("--mirror", "", ("--mirror",)),
        ("--prune", "", ("--prune",)),
    ),
    "git branch": (("-D", "DdMCf", ("--delete", "--force", "--move", "--copy")),),
    "git reset": (("--hard", "", ("--hard", "--merge", "--keep")),),
    "git checkout": (("-f", "fp", ("--force", "--patch", "--ours", "--theirs")),),
    "git switch": (("-f", "fC", ("--force", "--discard-changes", "--force-create")),),
    "git restore": (("--staged", "S", ("--staged",)), ("--worktree", "W", ("--worktree",))),
    "git clean": (("-f", "f", ("--force",)), ("-d", "dxX", ()), ("-n", "n", ("--dry-run",))),
    "git rm": (("-f", "f", ("--force",)), ("-r", "r", ()), ("--cached", "", ("--cached",))),
    "git tag": (("-d", "df", ("--delete", "--force")),),
    "git worktree": (("-f", "f", ("--force",)),),
    "git fetch": (("--prune", "p", ("--prune", "--force")),),
}
_GROUP_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": _names("stash worktree submodule remote reflog notes bisect lfs"),
    "docker": _names("system image container volume network compose builder buildx context"),
    "podman": _names("system image container volume network pod"),
    "npm": _names("cache config"),
    "kubectl": _names("config"),
}
# Commands whose every run does something different: only the exact command is covered.
_WHOLE_COMMAND_PROGRAMS = _names("find dd truncate shred eval source . xargs parallel awk gawk mawk tar ssh")


def _destructive_marks(key: str, args: Sequence[str]) -> list[str]:
    if key == "rm":  # one spelling for `-R`, `--recu`, `--forc`
        flags = rm_flags(Invocation((Word("rm"), *(Word(a) for a in args))))
        return [f"-{f}" if len(f) == 1 else f"--{f}" for f in sorted(flags)]
    marks: set[str] = set()
    for mark, letters, names in _DESTRUCTIVE_OPTIONS.get(key, ()):
        for text in args:
            if text == "--":
                break
            if text.startswith("--"):
                prefix = text.partition("=")[0]
                if len(prefix) > 3 and any(name.startswith(prefix) for name in names):
                    marks.add(mark)
            elif text.startswith("-") and set(text[1:]) & set(letters):
                marks.add(mark)
    if key == "git checkout" and "--" in args:
        marks.add("--")
    return sorted(marks)


def _with_marks(scope: str, marks: list[str]) -> str:
    return " ".join([scope, *marks])


def _writes_file(redirect: Redirect) -> bool:
    """Output into a file (not /dev/null, not `2>&1`)."""
    if not redirect.writes:
        return False
    target = redirect.target.text
    return not (target in _HARMLESS_DEVICES or (redirect.op == ">&" and target.isdigit()))


def command_scope(command: str) -> str:
    """What an "always" answer for a command covers: its program and subcommand, plus
    its destructive options in one spelling, so "always" never widens to them.

    `git status -s` -> "git status", `npm run test` -> "npm run", `python -m pytest -x` ->
    "python -m pytest", `ls -la` -> "ls", `cd src && make` -> "make" (directory changes are
    left out), `rm -R --forc x` -> "rm -f -r", `git push --del o b` -> "git push -d".
    Anything an "always" could not safely stretch to cover gets the whole normalised
    command as its scope, so it only ever covers what was seen: compound commands with
    more than one program, substitutions, wrappers (`sudo`, `env`, `xargs`, …), leading
    `VAR=value`, inline code (`python -c`, `bash -c`), redirection into a file, a risky
    program with operands the shell computes (`rm *.txt`, `rm -rf $PWD`), programs like
    `find` and `dd` whose every run differs, subshells and commands that cannot be parsed.
    """
    whole = _normalised(command)
    try:
        script = parse_command(command)
    except ShellSyntaxError:
        return whole
    scopes: set[str] = set()
    moved = False
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                return whole
            words = [w for w in element.words if w.text not in KEYWORDS]
            if any(True for _ in element.substitutions()) or any(_writes_file(r) for r in element.redirects):
                return whole
            if not words:
                continue
            invocation = Invocation(tuple(words))
            if ASSIGNMENT.match(words[0].text) or invocation.program in WRAPPERS:
                return whole
            if not words[0].literal or (
                invocation.program in RISKY_PROGRAMS and not all(w.literal for w in words)
            ):
                return whole  # `rm *.txt`, `rm -rf $PWD`: what it reaches is not in the scope
            if invocation.program in _DIRECTORY_ONLY:
                moved = True
                continue
            if unwrap(words)[1] or invocation.program in _ELEVATORS:  # also `eval`: its code is nested
                return whole
            scope = _program_scope(invocation)
            if scope is None:
                return whole
            scopes.add(scope)
    if len(scopes) == 1:
        return scopes.pop()
    if not scopes and moved:
        return "cd"
    return whole
