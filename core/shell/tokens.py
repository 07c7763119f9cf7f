"""What a command line is read into: words, operators and redirections, and the errors of
reading it. `hermes_core.shell.lexer` produces the tokens, `hermes_core.shell.parse` builds
commands from them, and the command rules read the words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_core.errors import InvalidInput


class ShellSyntaxError(InvalidInput):
    """The command could not be read (an unclosed quote, parenthesis or substitution)."""


class ShellTooDeep(ShellSyntaxError):
    """Substitutions or parentheses nested deeper than the reader follows."""


MAX_PARSE_DEPTH = 48  # parentheses and `${…}`/`$((…))` nested deeper than this are not read


@dataclass(slots=True)
class Word:
    text: str  # quotes removed; substitutions kept as written
    subs: list[str] = field(default_factory=list)  # command text of each $(…), `…`, <(…), >(…)
    quoted: bool = False
    # What the shell will do to the word before a program sees it: "parameter", "command",
    # "arithmetic", "ansi-c", "glob", "brace", "tilde", "process". Empty: the text is exact.
    expansions: set[str] = field(default_factory=set)

    @property
    def literal(self) -> bool:
        """Whether the program receives exactly `text` (nothing expanded, split or globbed)."""
        return not self.expansions


@dataclass(slots=True)
class Operator:
    text: str
    body: str | None = None  # the here-document of `<<` / `<<-`


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word
    body: str | None = None  # the here-document of `<<` / `<<-`

    @property
    def writes(self) -> bool:
        """Whether it sends output to its target (`>`, `>>`, `&>`, `<>`, …)."""
        return self.op in _OUTPUT_REDIRECTS


OPERATORS = (  # longest first where one starts another
    "&&",
    "||",
    ";;",
    "|&",
    "&>>",
    "&>",
    ">>",
    ">|",
    ">&",
    "<<<",
    "<<-",
    "<<",
    "<&",
    "<>",
    ";",
    "|",
    "&",
    "(",
    ")",
    "<",
    ">",
)
REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", "<", ">"})
_OUTPUT_REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<>", ">"})
