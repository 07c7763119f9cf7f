"""Commands from a command line: pipelines of simple commands and subshells.

The parser takes the tokens of `hermes_core.shell.lexer` apart at the operators between commands
(`&&`, `||`, `;`, `|`, `&`, newlines) and parentheses, keeps redirections with their
command, and reads `name() { …; }` as the command `function name` so the rules see it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from hermes_core.shell.invocation import Invocation, Nested
from hermes_core.shell.lexer import tokenize
from hermes_core.shell.tokens import (
    MAX_PARSE_DEPTH,
    REDIRECTS,
    Operator,
    Redirect,
    ShellSyntaxError,
    ShellTooDeep,
    Word,
)


@dataclass(slots=True)
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    # What `hermes_core.shell.programs.unwrapped` worked out for it: the rules ask several times.
    unwrap_cache: tuple[list[Invocation], list[Nested]] | None = field(
        default=None, repr=False, compare=False
    )

    def substitutions(self) -> Iterator[str]:
        """The command text of every substitution in its words and redirection targets."""
        for word in [*self.words, *(r.target for r in self.redirects)]:
            yield from word.subs


@dataclass(slots=True)
class Subshell:
    body: list[list[SimpleCommand | Subshell]]


Pipeline = list[SimpleCommand | Subshell]
Script = list[Pipeline]


class _Parser:
    def __init__(self, tokens: list[Word | Operator]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def _array_values(self, assignment: Word) -> None:
        """`a=(one $(two))`: the values belong to the assignment; their substitutions run."""
        while self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            self.pos += 1
            if isinstance(token, Operator):
                if token.text == ")":
                    return
                raise ShellSyntaxError(f"`{token.text}` inside an array assignment")
            assignment.subs.extend(token.subs)
            assignment.expansions |= token.expansions
        raise ShellSyntaxError("unclosed array assignment")

    def script(self, *, nested: bool) -> Script:
        self.depth += 1
        if self.depth > MAX_PARSE_DEPTH:
            raise ShellTooDeep("nested too deeply")
        script: Script = []
        pipeline: Pipeline = []
        command = SimpleCommand()
        closed = False
        while self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            self.pos += 1
            if isinstance(token, Word):
                command.words.append(token)
                continue
            op = token.text
            if op in REDIRECTS:
                target = self.tokens[self.pos] if self.pos < len(self.tokens) else None
                if not isinstance(target, Word):
                    raise ShellSyntaxError(f"`{op}` without a target")
                self.pos += 1
                command.redirects.append(Redirect(op, target, token.body))
                continue
            if op == "(" and command.words and re.fullmatch(r"[^=]+\+?=", command.words[-1].text):
                self._array_values(command.words[-1])
                continue
            if op == "(" and command.words:
                # `name() { …; }` defines a function: it reads as the command `function name`,
                # so the rule on `function` sees it. The body follows as ordinary commands.
                command.words.insert(0, Word("function"))
            if command.words or command.redirects:
                pipeline.append(command)
                command = SimpleCommand()
            if op == "(":
                pipeline.append(Subshell(self.script(nested=True)))
            elif op == ")" and nested:
                closed = True
                break
            elif op not in ("|", "|&"):
                # ;, &, &&, ||, ;; and a stray ")" (a case pattern) end the pipeline
                if pipeline:
                    script.append(pipeline)
                pipeline = []
        if nested and not closed:
            raise ShellSyntaxError("unclosed parenthesis")
        if command.words or command.redirects:
            pipeline.append(command)
        if pipeline:
            script.append(pipeline)
        self.depth -= 1
        return script


def parse_command(source: str) -> Script:
    """The command as pipelines of simple commands and subshells; raises ShellSyntaxError
    (ShellTooDeep when it nests deeper than the reader follows)."""
    try:
        return _Parser(tokenize(source)).script(nested=False)
    except RecursionError as exc:
        raise ShellTooDeep("nested too deeply") from exc


@dataclass(frozen=True, slots=True)
class CommandLine:
    """A command line read once: its text, and its script or why it cannot be read. Each
    question asked of one call's command (the danger rules, what "always" covers, the files
    an "always" is bound to, the permission rules) reads this one parse."""

    text: str
    script: Script | None
    error: ShellSyntaxError | None = None

    @classmethod
    def read(cls, text: str) -> CommandLine:
        try:
            return cls(text, parse_command(text))
        except ShellSyntaxError as exc:
            return cls(text, None, exc)

    @classmethod
    def of(cls, command: str | CommandLine) -> CommandLine:
        return command if isinstance(command, CommandLine) else cls.read(command)

    def parsed(self) -> Script:
        """The script; raises ShellSyntaxError (ShellTooDeep) when the line cannot be read."""
        if self.script is None:
            raise self.error or ShellSyntaxError("cannot read the command")
        return self.script


def parse_or_empty(source: str) -> Script:
    """The parsed command, or nothing to run when it cannot be read."""
    try:
        return parse_command(source)
    except ShellSyntaxError:
        return []


def simple_commands(script: Script) -> Iterator[SimpleCommand]:
    """Every simple command of the script, those in subshells included, in order."""
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                yield from simple_commands(element.body)
            else:
                yield element
