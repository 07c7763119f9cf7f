"""What a simple command runs: its assignments and wrappers taken off layer by layer.

`unwrap` turns `env X=1 sudo rm -rf /` into the programs env, sudo and rm, and collects
the code a command hands to another interpreter (`bash -c '…'`, `eval …`, `find -exec …`,
`ssh host …`) to be read as commands in turn. `all_invocations` follows that through
substitutions and nested code, as deep as the rules follow it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from hermes_core.shell.invocation import Invocation, Nested
from hermes_core.shell.parse import Script, SimpleCommand, parse_command, parse_or_empty, simple_commands
from hermes_core.shell.tokens import ShellSyntaxError, Word


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
KEYWORDS = frozenset(
    {"!", "{", "}", "if", "then", "elif", "else", "fi", "while", "until", "do", "done", "esac"}
)

# Wrappers run the rest of their arguments as a command; these are their options that
# take a value, so the value is not mistaken for the command.
WRAPPERS: dict[str, frozenset[str]] = {
    "nohup": frozenset(),
    "busybox": frozenset(),
    "builtin": frozenset(),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-t", "--class", "--classdata"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": _names(
        "-I -L -n -P -d -E -s -a --max-args --max-procs --delimiter --arg-file --max-lines "
        "--replace --eof --max-chars"
    ),
    "sudo": _names(
        "-u -g -C -D -h -p -r -t -U -T --user --group --chdir --host --prompt --role --type "
        "--other-user --close-from --command-timeout"
    ),
    "doas": frozenset({"-u", "-C"}),
    "pkexec": frozenset({"--user"}),
    "run0": frozenset({"-u", "--user", "-D", "--chdir", "--unit", "--property", "--setenv", "--slice"}),
    "toybox": frozenset(),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": frozenset({"-t", "-w"}),
    "catchsegv": frozenset(),
    "fakeroot": frozenset({"-l", "--lib", "--faked", "-s", "-i"}),
    "torsocks": frozenset({"-a", "-P", "-u", "-p", "--address", "--port", "--user", "--pass"}),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "strace": frozenset({"-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-A", "-D", "-E", "-F", "-l", "-n", "-x"}),
    "valgrind": frozenset(),
    "firejail": frozenset(),
    "numactl": frozenset({"-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind"}),
    "xvfb-run": frozenset({"-n", "-s", "-f", "-e", "-p", "--server-num", "--server-args", "--auth-file"}),
    "dbus-run-session": frozenset({"--config-file", "--dbus-daemon"}),
    "tini": frozenset({"-p", "-e"}),
    "dumb-init": frozenset({"-r", "--rewrite"}),
    "unshare": frozenset({"-S", "-G", "--setuid", "--setgid", "-w", "--wd", "-R", "--root"}),
    "nsenter": frozenset({"-t", "--target", "-S", "-G", "-w", "-r", "--wd", "--root"}),
    "systemd-run": frozenset({"-p", "--property", "-u", "--unit", "-E", "--setenv", "--slice", "-M"}),
    "cgexec": frozenset({"-g"}),
    "entr": frozenset(),
}
# Wrappers whose first operand is a value, not the command: `timeout 5 cmd`, `chrt 10 cmd`.
_VALUE_FIRST = frozenset({"timeout", "chrt", "taskset", "chroot", "flock", "faketime", "sg"})
_WRAPPER_VALUE_OPTIONS = frozenset({"-E", "-w", "--conflict-exit-code", "-f", "--userspec", "--groups"})
_SSH_VALUE_OPTIONS = _names("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B")
# Wrappers that feed the command input it reads as arguments: what it operates on is not
# in the command line (`… | xargs rm`).
FEEDERS = frozenset({"xargs", "entr"})
# Package runners: `npx rimraf dist`, `npm exec -- tool`, `uvx ruff`, `pipx run black`.
_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx"})
_RUNNER_SUBCOMMANDS = frozenset(
    {
        ("npm", "exec"),
        ("npm", "x"),
        ("pnpm", "exec"),
        ("pnpm", "dlx"),
        ("yarn", "dlx"),
        ("yarn", "exec"),
        ("bun", "x"),
        ("pipx", "run"),
        ("uv", "run"),
        ("poetry", "run"),
        ("pdm", "run"),
        ("hatch", "run"),
        ("pipenv", "run"),
        ("conda", "run"),
        ("mamba", "run"),
        ("bundle", "exec"),
    }
)
_RUNNER_VALUE_OPTIONS = _names(
    "-p --package --python --with --from -n --name --project --directory --env-file --extra "
    "--group --spec -w --workspace --prefix"
)
_RUNNER_CODE_OPTIONS = frozenset({"-c", "--call"})  # npx -c / npm exec -c: shell code
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
INTERPRETER_CODE_FLAGS: dict[str, str] = {  # letters of options whose value is code, not a file
    "shell": "c",
    "python": "cm",
    "node": "ep",
    "ruby": "e",
    "perl": "eE",
    "php": "r",
    "other": "ecE",  # lua -e, Rscript -e, julia -e, osascript -e, pwsh -c, groovy -e
}
_OTHER_INTERPRETERS = _names(
    "lua luajit Rscript julia osascript pwsh powershell groovy tclsh wish guile racket sbcl "
    "clisp elixir erl scala kotlin jshell R"
)
_VALUE_OPTIONS = frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file", "-W", "-X", "-r", "--require"})
CODE_OPTIONS = frozenset({"--eval", "--print", "--command", "-Command", "-EncodedCommand", "--exec"})
EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@functools.lru_cache(maxsize=512)
def interpreter_family(program: str) -> str | None:
    """Which interpreter a program is, if it runs code it is given."""
    if program in _SHELLS:
        return "shell"
    if re.fullmatch(r"python[\d.]*|pypy[\d.]*", program):
        return "python"
    if program in ("node", "nodejs", "bun", "deno"):
        return "node"
    if program in ("ruby", "perl", "php"):
        return program
    if program in _OTHER_INTERPRETERS:
        return "other"
    return None


def _strip_prefix(words: list[Word]) -> list[Word]:
    i = 0
    while i < len(words) and (words[i].text in KEYWORDS or ASSIGNMENT.match(words[i].text)):
        i += 1
    return words[i:]


def after_options(words: list[Word], with_value: frozenset[str]) -> list[Word]:
    """The words from the first one that is not an option (or after `--`)."""
    i = 0
    while i < len(words):
        text = words[i].text
        if text == "--":
            return words[i + 1 :]
        if not text.startswith("-") or text == "-":
            return words[i:]
        i += 2 if text in with_value else 1
    return []


def unwrapped(command: SimpleCommand) -> tuple[list[Invocation], list[Nested]]:
    """`unwrap(command.words)`, worked out once per command: the rules ask it several times."""
    if command.unwrap_cache is None:
        command.unwrap_cache = unwrap(command.words)
    return command.unwrap_cache


def unwrap(words: list[Word]) -> tuple[list[Invocation], list[Nested]]:
    """Each program a command runs in turn (`env X=1 sudo rm -rf /` -> env, sudo, rm), and
    the commands it hands to another interpreter (`bash -c '…'`, `eval …`, `find -exec …`)."""
    invocations: list[Invocation] = []
    nested: list[Nested] = []
    rest = _strip_prefix(words)
    fed = False
    while rest and len(invocations) < 16:
        invocation = Invocation(tuple(rest), fed)
        invocations.append(invocation)
        fed = fed or invocation.program in FEEDERS
        rest = _strip_prefix(_wrapped(invocation, nested))
    return invocations, nested


def _wrapped(invocation: Invocation, nested: list[Nested]) -> list[Word]:
    """The command a wrapper runs; records code handed over as text in `nested`."""
    program, args = invocation.program, list(invocation.words[1:])
    texts = [w.text for w in args]
    if program == "command" and any(t in ("-v", "-V") for t in texts):
        return []  # a lookup, not a run
    if program == "env":
        for i, text in enumerate(texts):
            if text in ("-S", "--split-string") and i + 1 < len(args):
                nested.append(" ".join([args[i + 1].text, *texts[i + 2 :]]))
                return []
            if text.startswith("--split-string=") or (text.startswith("-S") and len(text) > 2):
                code = text.partition("=")[2] if text.startswith("--") else text[2:]
                nested.append(" ".join([code, *texts[i + 1 :]]))
                return []
    if program == "flock" or program == "script":
        for i, text in enumerate(texts):
            if text in ("-c", "--command") and i + 1 < len(args):
                nested.append(args[i + 1].text)
                return []
    if program == "ssh":  # the remote command is shell code, run on the other side
        command = after_options(args, _SSH_VALUE_OPTIONS)[1:]
        if command:
            nested.append(" ".join(w.text for w in command))
        return []
    if program in _VALUE_FIRST:
        return after_options(args, WRAPPERS.get(program, _WRAPPER_VALUE_OPTIONS))[1:]
    if program in WRAPPERS:
        return after_options(args, WRAPPERS[program])
    if program in _RUNNERS or (texts and (program, texts[0]) in _RUNNER_SUBCOMMANDS):
        return _run_by_runner(args if program in _RUNNERS else args[1:], nested)
    if program in ("mapfile", "readarray"):  # `-C CODE`: a callback bash evaluates
        for i, text in enumerate(texts):
            if text == "-C" and i + 1 < len(args):
                nested.append(args[i + 1].text)
            elif text.startswith("-C") and len(text) > 2:
                nested.append(text[2:])
        return []
    if program == "trap" and args and args[0].text not in ("-l", "-p"):
        nested.append(args[0].text)
        return []
    if program == "git":
        return _git_runs(args, nested)
    if program == "su":
        for i, text in enumerate(texts):
            if text in ("-c", "--command") and i + 1 < len(args):
                nested.append(args[i + 1].text)
            elif text.startswith("--command="):
                nested.append(text.partition("=")[2])
        return []
    if program == "eval":
        nested.append(" ".join(texts))
        return []
    if program == "watch":
        command = after_options(args, frozenset({"-n", "--interval", "-d"}))
        if command:
            nested.append(" ".join(w.text for w in command))
        return []
    if program == "find":
        for i, text in enumerate(texts):
            if text in EXEC_ACTIONS:
                end = next((j for j in range(i + 1, len(texts)) if texts[j] in (";", "+")), len(texts))
                nested.append(args[i + 1 : end])
        return []
    if interpreter_family(program) == "shell":
        i = 0
        while i < len(args) and texts[i].startswith(("-", "+")) and texts[i] not in ("-", "--"):
            if not texts[i].startswith("--") and "c" in texts[i][1:]:
                after = after_options(args[i + 1 :], _VALUE_OPTIONS)
                if after:
                    nested.append(after[0].text)
                return []
            i += 2 if texts[i] in _VALUE_OPTIONS else 1
    return []


def _run_by_runner(args: list[Word], nested: list[Nested]) -> list[Word]:
    """The package a runner runs (`npx rimraf dist` -> rimraf), or its `-c` code."""
    for i, word in enumerate(args):
        if word.text in _RUNNER_CODE_OPTIONS and i + 1 < len(args):
            nested.append(args[i + 1].text)
            return []
    return after_options(args, _RUNNER_VALUE_OPTIONS)


def _git_runs(args: list[Word], nested: list[Nested]) -> list[Word]:
    """Commands git itself runs: `submodule foreach …`, `rebase --exec …`, `bisect run …`."""
    texts = [w.text for w in args]
    for i, text in enumerate(texts):
        if text == "foreach" and "submodule" in texts[:i]:
            nested.append(" ".join(t for t in texts[i + 1 :] if t != "--recursive"))
        elif text in ("-x", "--exec") and i + 1 < len(args) and "rebase" in texts[:i]:
            nested.append(texts[i + 1])
        elif text.startswith("--exec=") and "rebase" in texts[:i]:
            nested.append(text.partition("=")[2])
        elif "difftool" in texts[:i] and text in ("-x", "--extcmd") and i + 1 < len(args):
            nested.append(texts[i + 1])  # `git difftool -x CMD`: CMD runs on each changed file
        elif "difftool" in texts[:i] and text.startswith("--extcmd="):
            nested.append(text.partition("=")[2])
        elif "grep" in texts[:i] and (text.startswith("--open-files-in-pager") or text.startswith("-O")):
            pager = text.partition("=")[2] if text.startswith("--") else text[2:]
            nested.append(pager or "$unknown_pager")  # `git grep -O'sh -c …'`: the pager runs
        elif text == "run" and texts[i - 1 : i] == ["bisect"]:
            return args[i + 1 :]
    return []


def reads_code_from_stdin(invocation: Invocation) -> bool:
    """Whether an interpreter runs what is piped into it (`sh`, `bash -s`, `python -`)."""
    family = interpreter_family(invocation.program)
    if family is None:
        return False
    code_flags = INTERPRETER_CODE_FLAGS[family]
    texts = list(invocation.args)
    i = 0
    while i < len(texts):
        text = texts[i]
        if text == "-":
            return True
        if text == "--":
            return i + 1 >= len(texts)
        if not text.startswith(("-", "+")):
            return False  # a script file
        if text in CODE_OPTIONS:
            return False
        if not text.startswith("--") and (set(text[1:]) & set(code_flags)):
            return False
        if family == "shell" and not text.startswith("--") and "s" in text[1:]:
            return True
        i += 2 if text in _VALUE_OPTIONS else 1
    return True


MAX_NESTING = 8  # how deep substitutions and code handed to shells are followed


def all_invocations(script: Script, depth: int = 0) -> Iterator[Invocation]:
    """Every program the script may run, however deeply it is wrapped or substituted."""
    return (invocation for invocation, _ in walk_invocations(script, depth))


class Unreadable(Exception):
    """A part of a command line a strict walk cannot follow: code that is not shell syntax,
    or nested deeper than MAX_NESTING."""


def walk_invocations(
    script: Script, depth: int = 0, *, strict: bool = False
) -> Iterator[tuple[Invocation, bool]]:
    """(invocation, its command handed code to run: `bash -c '…'`, `xargs sh -c`) for every
    program the script may run. Where a part cannot be read, the lenient walk skips it (the
    danger rules judge the text as well); a `strict` one raises `Unreadable`, for a caller
    to whom an unread program means "anything" (`sandbox/cache_needs.py`)."""
    if depth > MAX_NESTING:
        if strict:
            raise Unreadable("nested too deep")
        return
    for command in simple_commands(script):
        for sub in command.substitutions():
            yield from walk_invocations(_parsed(sub, strict), depth + 1, strict=strict)
        invocations, nested = unwrap(command.words)
        for invocation in invocations:
            yield invocation, bool(nested)
        for item in nested:
            inner: Script = _parsed(item, strict) if isinstance(item, str) else [[SimpleCommand(list(item))]]
            yield from walk_invocations(inner, depth + 1, strict=strict)


def _parsed(source: str, strict: bool) -> Script:
    if not strict:
        return parse_or_empty(source)
    try:
        return parse_command(source)
    except ShellSyntaxError as exc:
        raise Unreadable(str(exc)) from exc
