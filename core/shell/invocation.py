"""What unwrapping a simple command yields: the programs it runs and the code it hands on.

Its own module so the parser can cache `programs.unwrapped`'s answer on a command
without the parser and the unwrapper importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_core.shell.lexer import Word


@dataclass(frozen=True, slots=True)
class Invocation:
    """One program with its arguments, after assignments and wrappers were taken off."""

    words: tuple[Word, ...]
    fed: bool = False  # run by xargs/entr: its arguments also come from input not in the command
    program: str = field(init=False)  # the name it runs by: `/bin/rm` -> rm

    def __post_init__(self) -> None:
        first = self.words[0]
        object.__setattr__(self, "program", first.text if first.subs else first.text.rsplit("/", 1)[-1])

    @property
    def args(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words[1:])


Nested = str | list[Word]  # command text to parse, or words that form a command
