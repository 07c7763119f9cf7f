"""`dangerous_rule`: whether a command asks before it runs, in every mode.

The rules (`hermes_core.command_rules.disasters`, then `hermes_core.command_rules.fail_closed`) are applied
to every program a command may run: each part of a chain or pipeline, subshells,
substitutions, wrapped commands (`sudo`, `env`, `xargs`, `nohup`, …) and code handed to a
shell (`bash -c`, `eval`, here-documents). A few checks look at more than one program (a
download piped into a shell, a file written then run, a `cd` out of the workspace) or at
redirections, and are applied here.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Sequence

from hermes_core.command_rules.disasters import (
    DISK_DEVICE,
    DISK_WRITE,
    DOWNLOAD_RUN,
    DOWNLOADERS,
    RULES,
    SYSTEM_FILE,
    SYSTEM_WRITE,
)
from hermes_core.command_rules.fail_closed import SHELL_COMPUTED, fail_closed
from hermes_core.command_rules.hidden_code import interpreter_stdin_unseen, script_operand, variable_code
from hermes_core.command_rules.words import (
    Roots,
    computed_or_outside,
    names,
    outside,
    split_options,
    writes_file,
)
from hermes_core.shell.parse import (
    CommandLine,
    Pipeline,
    Script,
    SimpleCommand,
    Subshell,
    parse_or_empty,
    simple_commands,
)
from hermes_core.shell.programs import (
    MAX_NESTING,
    Invocation,
    Nested,
    all_invocations,
    interpreter_family,
    reads_code_from_stdin,
    unwrap,
    unwrapped,
)
from hermes_core.shell.tokens import Redirect, ShellTooDeep, Word

UNPARSEABLE = "could not parse the command"
TOO_DEEP = "command nested too deeply to check"
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*?\1\s*\|\s*&?\s*\1[^}]*\}")
FORK_BOMB = "fork bomb"
WRITES_UNSEEN = "writes to a file outside the working directory or named by an expansion (> ~/.bashrc, > $F)"
PIPED_CODE = "runs code piped into an interpreter (… | sh, … | python)"
WRITTEN_THEN_RUN = "runs a file that the same command downloads or writes (curl -o x.sh && sh x.sh)"


def dangerous_rule(command: str | CommandLine, *, roots: Sequence[str] = ()) -> str | None:
    """The description of the first rule the command hits, or None when it can be shown
    harmless. `roots` are the workspace directories, handed to every rule: absolute paths
    inside them are not "outside" (without them, every absolute path but /tmp/… is).
    `command` may come read already (`CommandLine`): the approval reads each line once.

    Fails closed: a command the reader cannot parse, or that nests deeper than it
    follows, counts as dangerous, so it asks in every mode.
    """
    line = CommandLine.of(command)
    try:
        return _check_line(line, 0, tuple(roots))
    except RecursionError:
        return TOO_DEEP


def _check_source(source: str, depth: int, roots: Roots) -> str | None:
    if depth > MAX_NESTING:
        return TOO_DEEP
    return _check_line(CommandLine.read(source), depth, roots)


def _check_line(line: CommandLine, depth: int, roots: Roots) -> str | None:
    if _FORK_BOMB.search(line.text):  # a function that pipes itself into itself, in the background
        return FORK_BOMB
    if isinstance(line.error, ShellTooDeep):
        return TOO_DEEP
    if line.script is None:
        return UNPARSEABLE
    script = line.script
    return _check_script(script, depth, roots) or _written_then_run(script) or _works_elsewhere(script, roots)


def _check_script(script: Script, depth: int, roots: Roots) -> str | None:
    if depth > MAX_NESTING:
        return TOO_DEEP
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                hit = _check_script(element.body, depth + 1, roots)
            else:
                hit = _check_command(element, depth, roots)
            if hit:
                return hit
        if hit := _check_pipe(pipeline, depth, roots):
            return hit
    return None


def _check_command(command: SimpleCommand, depth: int, roots: Roots) -> str | None:
    for sub in command.substitutions():
        if hit := _check_source(sub, depth + 1, roots):
            return hit
    for word in [*command.words, *(r.target for r in command.redirects)]:
        if "prompt" in word.expansions:
            return "expands a variable like a prompt (${x@P} runs the $(…) in its value)"
        if "process" in word.expansions and any(_reads_code(sub) for sub in word.subs):
            return PIPED_CODE  # `> >(sh)`, `tee >(bash)`
    for redirect in command.redirects:
        if redirect.writes:
            if DISK_DEVICE.match(redirect.target.text):
                return DISK_WRITE
            if SYSTEM_FILE.match(redirect.target.text):
                return SYSTEM_WRITE
            if _redirect_unseen(redirect, roots):
                return WRITES_UNSEEN
    return _check_words(command.words, command.redirects, depth, roots, unwrapped(command))


def _check_words(
    words: list[Word],
    redirects: list[Redirect],
    depth: int,
    roots: Roots,
    unwrapped: tuple[list[Invocation], list[Nested]] | None = None,
) -> str | None:
    loads_code, variable_commands = variable_code(words)
    if loads_code:
        return "sets a variable that makes programs load other code (LD_PRELOAD, BASH_ENV, GIT_CONFIG_*, …)"
    for code in variable_commands:
        if hit := _check_source(code, depth + 1, roots):
            return hit
    invocations, nested = unwrapped or unwrap(words)
    pending: str | None = None  # a fail-closed hit; a named disaster in nested code says more
    for invocation in invocations:
        for rule in RULES:
            if rule.matches(invocation, roots):
                return rule.description
        pending = pending or fail_closed(invocation, roots)
    for item in nested:
        if isinstance(item, str):
            hit = _check_source(item, depth + 1, roots)
        else:
            hit = _check_words(list(item), [], depth + 1, roots)
        if hit:
            return hit
    if pending:
        return pending
    if invocations and interpreter_family(invocations[-1].program) == "shell":
        for redirect in redirects:  # `bash <<EOF … EOF`, `sh <<< "…"`
            if redirect.op == "<<<" and not redirect.target.literal:
                return SHELL_COMPUTED
            fed = redirect.target.text if redirect.op == "<<<" else redirect.body
            if fed and (hit := _check_source(fed, depth + 1, roots)):
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


def _redirect_unseen(redirect: Redirect, roots: Roots) -> bool:
    """Output into a file the command line does not name plainly, or outside."""
    target = redirect.target
    if (redirect.op in (">&", "<>") and target.text.isdigit()) or target.text == "-":
        return False
    return not target.literal or outside(target.text, roots)


def _check_pipe(pipeline: Pipeline, depth: int, roots: Roots) -> str | None:
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
            if echoed and shell and (hit := _check_source(echoed, depth + 1, roots)):
                return hit
            return PIPED_CODE
        downloaded = downloaded or any(inv.program in DOWNLOADERS for inv in invocations)
        echoed = None
        if last is not None and last.program in ("echo", "printf"):
            echoed = " ".join(split_options(last.args)[1])
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
        if any(p in DOWNLOADERS for p in programs) and any(p in _EXTRACTORS for p in programs):
            fetched_tree = True  # `curl … | tar xz`
        for command in simple:
            invocations = unwrapped(command)[0]
            for redirect in command.redirects:
                if redirect.writes and not redirect.target.text.isdigit():
                    written.add(posixpath.basename(redirect.target.text))
                elif redirect.op == "<" and invocations and reads_code_from_stdin(invocations[-1]):
                    ran.add(posixpath.basename(redirect.target.text))
            for inv in invocations:
                if inv.program in _WRITERS or inv.program in DOWNLOADERS:  # `-O` names it after the URL
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
_WORKS_ON_FILES = names(
    "rm rmdir unlink mv cp ln install rsync chmod chown chgrp shred truncate dd find tee rimraf sed perl "
    "git tar unzip"
)


def _works_elsewhere(script: Script, roots: Roots) -> str | None:
    """`cd / && rm -rf usr`: after moving out of the working directory, relative paths
    are outside too."""
    moved = False
    for command in simple_commands(script):
        invocations = unwrapped(command)[0]
        if moved and (
            any(inv.program in _WORKS_ON_FILES for inv in invocations)
            or any(writes_file(r) for r in command.redirects)
        ):
            return "works on files outside the working directory (cd … && rm …)"
        for inv in invocations:
            words = inv.words
            if inv.program in _CHANGES_DIRECTORY:
                operands = [w for w in words[1:] if not (w.literal and w.text.startswith("-"))]
                target = operands[0] if operands else None
                moved = moved or target is None or computed_or_outside(target, roots) or words[-1].text == "-"
            elif inv.program in ("env", "sudo"):
                pairs = itertools.pairwise(words[1:])
                chdir = [w for before, w in pairs if before.text in ("-C", "--chdir", "-D")]
                if chdir and computed_or_outside(chdir[0], roots):
                    return "works on files outside the working directory (env -C …)"
    return None


def _ran_file(inv: Invocation) -> str | None:
    """The file an invocation runs as code: `./x.sh`, `sh x.sh`, `source x`, `python x.py`."""
    if inv.program in ("source", "."):
        operands = split_options(inv.args)[1]
        return operands[0] if operands else None
    script = script_operand(inv)
    if script is not None:
        return script.text
    first = inv.words[0].text
    return first if "/" in first else None
