"""Words of a command line as the danger rules see them: paths outside the workspace,
options in any spelling (`--recu`, `-Rf`), operands the shell computes."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from contextvars import ContextVar

from core.shell.programs import Invocation
from core.shell.words import Word


def names(text: str) -> frozenset[str]:
    return frozenset(text.split())


HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})


# The workspace roots of the command being checked, when the caller knows them: an
# absolute path inside one is not outside.
WORKSPACE_ROOTS: ContextVar[tuple[str, ...]] = ContextVar("WORKSPACE_ROOTS", default=())


def outside(text: str) -> bool:
    """A literal path outside the working directory: absolute (other than a path in the
    workspace, a scratch path under /tmp or a harmless device), in a home (`~`), or
    climbing out with `..`. A path into a repository's `.git` counts too: its hooks and
    config run commands."""
    if text.startswith("~") or ".git" in text.split("/"):
        return True
    if text.startswith("/"):
        norm = posixpath.normpath(text)
        if any(norm == root or norm.startswith(root.rstrip("/") + "/") for root in WORKSPACE_ROOTS.get()):
            return False
        return not (norm.startswith("/tmp/") or norm in HARMLESS_TARGETS or norm.startswith("/dev/fd/"))
    norm = posixpath.normpath(text)
    return norm == ".." or norm.startswith("../")


def computed_or_outside(word: Word) -> bool:
    return not word.literal or outside(word.text)


def beyond_working_directory(word: Word) -> bool:
    """Like `computed_or_outside`, but a relative glob (`*.cfg`) only matches here."""
    return bool(word.expansions - {"glob"}) or outside(word.text)


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
