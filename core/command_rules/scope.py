"""What an "always allow" for a command covers: its program and subcommand, never its
destructive options (`rm -r`, `git push -d` have scopes of their own), and the whole command
when an "always" could not safely stretch further.
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes_core.command_rules.disasters import ELEVATORS
from hermes_core.command_rules.operands import RISKY_PROGRAMS, rm_flags
from hermes_core.command_rules.words import names, short_flags, subcommand_at, writes_file
from hermes_core.shell.parse import CommandLine, Subshell
from hermes_core.shell.programs import (
    ASSIGNMENT,
    CODE_OPTIONS,
    INTERPRETER_CODE_FLAGS,
    KEYWORDS,
    WRAPPERS,
    Invocation,
    after_options,
    interpreter_family,
    unwrap,
)
from hermes_core.shell.tokens import ShellSyntaxError, Word

# Programs whose first operand is a subcommand: `git status` -> "git status".
_SUBCOMMAND_PROGRAMS = names(
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
            if set(short_flags(text)) & set(code_flags) or text in CODE_OPTIONS:
                return None  # inline code: every run is different
            if not text.startswith("-"):
                return f"{program} {text}"  # a script file
        return None  # code from stdin
    if name in _WHOLE_COMMAND_PROGRAMS:
        return None
    if name not in _SUBCOMMAND_PROGRAMS:
        return _with_marks(program, _destructive_marks(name, args))
    i = subcommand_at(name, args)
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
    "git": names("stash worktree submodule remote reflog notes bisect lfs"),
    "docker": names("system image container volume network compose builder buildx context"),
    "podman": names("system image container volume network pod"),
    "npm": names("cache config"),
    "kubectl": names("config"),
}
# Commands whose every run does something different: only the exact command is covered.
_WHOLE_COMMAND_PROGRAMS = names("find dd truncate shred eval source . xargs parallel awk gawk mawk tar ssh")


def _destructive_marks(key: str, args: Sequence[str]) -> list[str]:
    if key == "rm":  # one spelling for `-R`, `--recu`, `--forc`
        flags = rm_flags(Invocation((Word("rm"), *(Word(a) for a in args))))
        return [f"-{f}" if len(f) == 1 else f"--{f}" for f in sorted(flags)]
    marks: set[str] = set()
    for mark, letters, long_names in _DESTRUCTIVE_OPTIONS.get(key, ()):
        for text in args:
            if text == "--":
                break
            if text.startswith("--"):
                prefix = text.partition("=")[0]
                if len(prefix) > 3 and any(name.startswith(prefix) for name in long_names):
                    marks.add(mark)
            elif text.startswith("-") and set(text[1:]) & set(letters):
                marks.add(mark)
    if key == "git checkout" and "--" in args:
        marks.add("--")
    return sorted(marks)


def _with_marks(scope: str, marks: list[str]) -> str:
    return " ".join([scope, *marks])


def command_scope(command: str | CommandLine) -> str:
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
    line = CommandLine.of(command)
    whole = _normalised(line.text)
    try:
        script = line.parsed()
    except ShellSyntaxError:
        return whole
    scopes: set[str] = set()
    moved = False
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                return whole
            words = [w for w in element.words if w.text not in KEYWORDS]
            if any(True for _ in element.substitutions()) or any(writes_file(r) for r in element.redirects):
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
            if unwrap(words)[1] or invocation.program in ELEVATORS:  # also `eval`: its code is nested
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
