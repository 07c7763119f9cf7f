"""Words of a command line as the danger rules see them: paths outside the workspace,
options in any spelling (`--recu`, `-Rf`), operands the shell computes, and the shape of
a rule (a description the user sees and a test on one invocation).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hermes_core.shell.programs import Invocation
from hermes_core.shell.tokens import Redirect, Word


def names(text: str) -> frozenset[str]:
    return frozenset(text.split())


HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})
HARMLESS_TARGETS = HARMLESS_DEVICES | {"-"}
GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})


# The workspace directories a command is checked against (`dangerous_rule(..., roots=)`),
# handed to every rule: an absolute path inside one is not outside. Empty when the caller
# knows none: then every absolute path but a scratch one under /tmp is outside.
Roots = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    description: str  # shown to the user: what the command would do
    matches: Callable[[Invocation, Roots], bool]


def outside(text: str, roots: Roots) -> bool:
    """A literal path outside the working directory: absolute (other than a path in the
    workspace, a scratch path under /tmp or a harmless device), in a home (`~`), or
    climbing out with `..`. A path into a repository's `.git` counts too: its hooks and
    config run commands."""
    if text.startswith("~") or ".git" in text.split("/"):
        return True
    if text.startswith("/"):
        norm = posixpath.normpath(text)
        if any(norm == root or norm.startswith(root.rstrip("/") + "/") for root in roots):
            return False
        return not (norm.startswith("/tmp/") or norm in HARMLESS_TARGETS or norm.startswith("/dev/fd/"))
    norm = posixpath.normpath(text)
    return norm == ".." or norm.startswith("../")


def computed_or_outside(word: Word, roots: Roots) -> bool:
    return not word.literal or outside(word.text, roots)


def beyond_working_directory(word: Word, roots: Roots) -> bool:
    """Like `computed_or_outside`, but a relative glob (`*.cfg`) only matches here."""
    return bool(word.expansions - {"glob"}) or outside(word.text, roots)


def long_options(text: str, known: Iterable[str]) -> set[str]:
    """The long options `text` may mean: GNU tools and git take any unambiguous prefix
    (`--recu` is `--recursive`); an ambiguous one may mean any of them."""
    name = text.partition("=")[0]
    if not name.startswith("--") or len(name) < 3:
        return set()
    return {option for option in known if option.startswith(name)}


def split_words(inv: Invocation, value_options: frozenset[str] = frozenset()) -> tuple[list[str], list[Word]]:
    """Options (texts) and operands (words). A word the shell computes is an operand:
    it may expand to anything."""
    options: list[str] = []
    operands: list[Word] = []
    words = list(inv.words[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word.text == "--" and word.literal:
            operands.extend(words[i + 1 :])
            break
        if word.literal and word.text.startswith("-") and word.text != "-":
            options.append(word.text)
            if word.text in value_options and i + 1 < len(words):
                options.append(words[i + 1].text)
                i += 1
        else:
            operands.append(word)
        i += 1
    return options, operands


def short_letters(options: Iterable[str]) -> set[str]:
    return {c for o in options if o.startswith("-") and not o.startswith("--") for c in o[1:]}


def has_option(options: list[str], *names: str, letters: str = "") -> bool:
    """Whether any option is one of `names` or a prefix of one (git and GNU tools take
    unambiguous prefixes; an ambiguous one counts too), or a short cluster containing one
    of `letters`."""
    for option in options:
        if option.partition("=")[0] in names or long_options(option, names):
            return True
        if letters and not option.startswith("--") and set(option[1:]) & set(letters):
            return True
    return False


def short_flags(text: str) -> str:
    """The letters of a short-option cluster (`-rf` -> `rf`), or "" for anything else."""
    return text[1:] if text.startswith("-") and not text.startswith("--") and len(text) > 1 else ""


def split_options(args: Iterable[str]) -> tuple[list[str], list[str]]:
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


def subcommand_at(program: str, args: Sequence[str]) -> int:
    """Where the subcommand is: past the leading options (and the values of git's `-C dir`)."""
    value_options = GIT_VALUE_OPTIONS if program == "git" else frozenset()
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in value_options else 1
    return i


def writes_file(redirect: Redirect) -> bool:
    """Output into a file (not /dev/null, not `2>&1`)."""
    if not redirect.writes:
        return False
    target = redirect.target.text
    return not (target in HARMLESS_DEVICES or (redirect.op == ">&" and target.isdigit()))


def find_starts(inv: Invocation) -> list[Word]:
    """The starting points of a `find`: the operands before its first test or action."""
    words = list(inv.words[1:])
    i = 0
    while i < len(words) and (
        words[i].text in ("-H", "-L", "-P", "-D") or re.fullmatch(r"-O\d", words[i].text)
    ):
        i += 2 if words[i].text == "-D" else 1
    starts = []
    while i < len(words) and not words[i].text.startswith(("-", "(", "!", ")")):
        starts.append(words[i])
        i += 1
    return starts
