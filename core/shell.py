"""Reading shell commands: what a command line runs, as opposed to what it says.

A small lexer and parser for the subset of shell syntax that decides what runs: simple
commands, the operators between them (`&&`, `||`, `;`, `|`, `&`, newlines), subshells,
quoting, `$(…)`/backtick/`<(…)` substitutions, redirections and here-documents. It keeps
what a word will run (its substitutions) apart from what it says, so `echo "rm -rf /"`
is an argument while `echo "$(rm -rf /)"` is a command.

On top of the parse, `unwrap` takes a simple command apart layer by layer: assignments,
wrappers (`sudo`, `env`, `xargs`, `nohup`, …) and code handed to another interpreter
(`bash -c '…'`, `eval …`, `find -exec …`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from core.errors import InvalidInput


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
class _Op:
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


@dataclass(slots=True)
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    _unwrapped: tuple[list[Invocation], list[Nested]] | None = field(default=None, repr=False, compare=False)

    def unwrapped(self) -> tuple[list[Invocation], list[Nested]]:
        """`unwrap(self.words)`, worked out once: the rules ask it several times."""
        if self._unwrapped is None:
            self._unwrapped = unwrap(self.words)
        return self._unwrapped

    def substitutions(self) -> Iterator[str]:
        """The command text of every substitution in its words and redirection targets."""
        for word in [*self.words, *(r.target for r in self.redirects)]:
            yield from word.subs


@dataclass(slots=True)
class Subshell:
    body: list[list[SimpleCommand | Subshell]]


Pipeline = list[SimpleCommand | Subshell]
Script = list[Pipeline]

_OPERATORS = (
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
_OPERATOR_START = frozenset(o[0] for o in _OPERATORS)
_REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", "<", ">"})
_OUTPUT_REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<>", ">"})
_WORD_END = frozenset(" \t\n;&|()<>")
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b", "a": "\a"}


_GLOB = re.compile(r"[*?]|\[[^]]+\]")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_TILDE = re.compile(r"(^|[=:])~")
_PARAMETER_START = re.compile(r"[A-Za-z_0-9@*#?$!-]")


class _Lexer:
    def __init__(self, source: str, depth: int = 0) -> None:
        if depth > MAX_PARSE_DEPTH:
            raise ShellTooDeep("nested too deeply")
        self.s = source
        self.depth = depth
        self.i = 0
        self.tokens: list[Word | _Op] = []
        self.heredocs: list[tuple[_Op, Word, bool]] = []
        self.expansions: set[str] = set()  # of the word being read

    def run(self) -> list[Word | _Op]:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "\n":
                self.i += 1
                self.tokens.append(_Op(";"))
                self._heredoc_bodies()
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif s.startswith(("<(", ">("), self.i):
                end = self._skip_paren(self.i + 2)
                self.tokens.append(Word(s[self.i : end], [s[self.i + 2 : end - 1]], expansions={"process"}))
                self.i = end
            elif c in _OPERATOR_START and (op := next(o for o in _OPERATORS if s.startswith(o, self.i))):
                self._operator(op)
            else:
                word = self._word()
                is_fd = word.text.isdigit() and not word.quoted and s[self.i : self.i + 1] in ("<", ">")
                if not is_fd:  # `2>` redirects stderr; the 2 is no argument
                    self.tokens.append(word)
        for op, _, _ in self.heredocs:  # a here-document the command never finished
            op.body = ""
        return self.tokens

    def _operator(self, op: str) -> None:
        self.i += len(op)
        token = _Op(op)
        self.tokens.append(token)
        if op in ("<<", "<<-"):
            while self.s[self.i : self.i + 1] in (" ", "\t"):
                self.i += 1
            delimiter = self._word()
            self.tokens.append(delimiter)
            self.heredocs.append((token, delimiter, op == "<<-"))

    def _heredoc_bodies(self) -> None:
        for op, delimiter_word, strip_tabs in self.heredocs:
            delimiter = delimiter_word.text
            lines: list[str] = []
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i : end]
                self.i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            op.body = "\n".join(lines)
            if not delimiter_word.quoted:  # `<<EOF` expands `$(…)` in its body: they run
                delimiter_word.subs.extend(_Lexer(op.body, self.depth + 1).expanded_substitutions())
        self.heredocs = []

    def _word(self) -> Word:
        s = self.s
        word = Word("")
        buf: list[str] = []
        unquoted: list[str] = []  # the word with every quoted or expanded part as NUL
        self.expansions = word.expansions
        while self.i < len(s) and s[self.i] not in _WORD_END:
            c = s[self.i]
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                buf.append(s[self.i + 1 : self.i + 2])
                unquoted.append("\0")
                word.quoted = True
                self.i += 2
            elif c == "'":
                end = self._skip_single(self.i + 1)
                buf.append(s[self.i + 1 : end - 1])
                unquoted.append("\0")
                word.quoted = True
                self.i = end
            elif c == '"':
                word.quoted = True
                self._double(buf, word.subs)
                unquoted.append("\0")
            elif c == "$":
                self._dollar(buf, word.subs, in_double=False)
                unquoted.append("\0")
            elif c == "`":
                self._backtick(buf, word.subs)
                unquoted.append("\0")
            else:
                buf.append(c)
                unquoted.append(c)
                self.i += 1
        word.text = "".join(buf)
        bare = "".join(unquoted)
        if _GLOB.search(bare):
            word.expansions.add("glob")
        if _BRACE.search(bare):
            word.expansions.add("brace")
        if _TILDE.search(bare):
            word.expansions.add("tilde")
        return word

    def expanded_substitutions(self) -> list[str]:
        """The substitutions in text where quotes mean nothing (a here-document body)."""
        s, subs = self.s, []
        i = 0
        while i < len(s):
            if s[i] == "\\":
                i += 2
            elif s.startswith("$((", i):
                end = self._skip_paren(i + 2)
                self._inner_substitutions(s[i + 3 : end - 1], subs)
                i = end
            elif s.startswith("$(", i):
                end = self._skip_paren(i + 2)
                subs.append(s[i + 2 : end - 1])
                i = end
            elif s.startswith("${", i):
                end = self._skip_brace(i + 2)
                self._inner_substitutions(s[i + 2 : end - 1], subs)
                i = end
            elif s[i] == "`":
                end = self._skip_backtick(i + 1)
                subs.append(s[i + 1 : end - 1])
                i = end
            else:
                i += 1
        return subs

    def _inner_substitutions(self, text: str, subs: list[str]) -> None:
        """The substitutions inside `${x:-$(…)}` or `$(( $(…) ))`: they run too."""
        if "$" not in text and "`" not in text:
            return
        for token in _Lexer(text, self.depth + 1).run():
            if isinstance(token, Word):
                subs.extend(token.subs)

    def _double(self, buf: list[str], subs: list[str]) -> None:
        s = self.s
        self.i += 1
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\":
                nxt = s[self.i + 1 : self.i + 2]
                if nxt in ("$", "`", '"', "\\"):
                    buf.append(nxt)
                elif nxt != "\n":
                    buf.append("\\" + nxt)
                self.i += 2
            elif c == "$":
                self._dollar(buf, subs, in_double=True)
            elif c == "`":
                self._backtick(buf, subs)
            else:
                buf.append(c)
                self.i += 1
        raise ShellSyntaxError("unclosed double quote")

    def _dollar(self, buf: list[str], subs: list[str], *, in_double: bool) -> None:
        s, i = self.s, self.i
        if s.startswith("$(", i):
            end = self._skip_paren(i + 2)
            if s.startswith("$((", i):  # $(( … )) is arithmetic, not a command
                self.expansions.add("arithmetic")
                self._inner_substitutions(s[i + 3 : end - 1], subs)
            else:
                self.expansions.add("command")
                subs.append(s[i + 2 : end - 1])
            buf.append(s[i:end])
            self.i = end
        elif s.startswith("${", i):
            end = self._skip_brace(i + 2)
            self.expansions.add("parameter")
            if s[i:end].endswith("@P}"):  # expanded like a prompt: `$(…)` in the value runs
                self.expansions.add("prompt")
            self._inner_substitutions(s[i + 2 : end - 1], subs)
            buf.append(s[i:end])
            self.i = end
        elif s.startswith("$'", i) and not in_double:
            self.expansions.add("ansi-c")
            self.i = i + 2
            while self.i < len(s) and s[self.i] != "'":
                if s[self.i] == "\\":
                    self.i = self._ansi_escape(buf, self.i + 1)
                else:
                    buf.append(s[self.i])
                    self.i += 1
            if self.i >= len(s):
                raise ShellSyntaxError("unclosed $'…' quote")
            self.i += 1
        elif s.startswith('$"', i) and not in_double:
            self.i = i + 1
            self._double(buf, subs)
        else:
            if _PARAMETER_START.match(s, i + 1):
                self.expansions.add("parameter")
            buf.append("$")
            self.i = i + 1

    def _ansi_escape(self, buf: list[str], j: int) -> int:
        """Decode one `$'…'` escape starting at `j` (past the backslash); returns the index after it."""
        s = self.s
        numeric = re.compile(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}").match(s, j)
        if numeric:
            digits = numeric.group()
            value = int(digits, 8) if digits[0].isdigit() else int(digits[1:], 16)
            buf.append(chr(min(value, 0x10FFFF)))
            return numeric.end()
        escaped = s[j : j + 1]
        buf.append(_ANSI_ESCAPES.get(escaped, escaped))
        return j + 1

    def _backtick(self, buf: list[str], subs: list[str]) -> None:
        self.expansions.add("command")
        end = self._skip_backtick(self.i + 1)
        inner = self.s[self.i + 1 : end - 1].replace("\\`", "`")
        subs.append(inner)
        buf.append(f"`{inner}`")
        self.i = end

    # The _skip_* helpers take the index just past an opening character and return the
    # index just past its closing one.

    def _skip_paren(self, j: int) -> int:
        return self._skip_nested(j, "(", ")", backticks=True, unclosed="unclosed parenthesis")

    def _skip_brace(self, j: int) -> int:
        return self._skip_nested(j, "{", "}", backticks=False, unclosed="unclosed ${")

    def _skip_nested(self, j: int, opening: str, closing: str, *, backticks: bool, unclosed: str) -> int:
        """Past the matching `closing`, stepping over quotes (and, in `$(…)`, backticks)."""
        s, depth = self.s, 1
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
            elif c == "'":
                j = self._skip_single(j + 1)
            elif c == '"':
                j = self._skip_double(j + 1)
            elif c == "`" and backticks:
                j = self._skip_backtick(j + 1)
            else:
                if c == opening:
                    depth += 1
                elif c == closing:
                    depth -= 1
                    if depth == 0:
                        return j + 1
                j += 1
        raise ShellSyntaxError(unclosed)

    def _skip_single(self, j: int) -> int:
        end = self.s.find("'", j)
        if end < 0:
            raise ShellSyntaxError("unclosed single quote")
        return end + 1

    def _skip_double(self, j: int) -> int:
        s = self.s
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
            elif c == '"':
                return j + 1
            elif s.startswith("$(", j):
                j = self._skip_paren(j + 2)
            elif c == "`":
                j = self._skip_backtick(j + 1)
            else:
                j += 1
        raise ShellSyntaxError("unclosed double quote")

    def _skip_backtick(self, j: int) -> int:
        s = self.s
        while j < len(s):
            if s[j] == "\\":
                j += 2
            elif s[j] == "`":
                return j + 1
            else:
                j += 1
        raise ShellSyntaxError("unclosed backtick")


class _Parser:
    def __init__(self, tokens: list[Word | _Op]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def _array_values(self, assignment: Word) -> None:
        """`a=(one $(two))`: the values belong to the assignment; their substitutions run."""
        while self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            self.pos += 1
            if isinstance(token, _Op):
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
            if op in _REDIRECTS:
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
        return _Parser(_Lexer(source).run()).script(nested=False)
    except RecursionError as exc:
        raise ShellTooDeep("nested too deeply") from exc


def parse_or_empty(source: str) -> Script:
    """The parsed command, or nothing to run when it cannot be read."""
    try:
        return parse_command(source)
    except ShellSyntaxError:
        return []


def _simple_commands(script: Script) -> Iterator[SimpleCommand]:
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                yield from _simple_commands(element.body)
            else:
                yield element


# --------------------------------------------------------------------------------------
# What a simple command runs: assignments and wrappers unwrapped layer by layer


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
    "xargs": frozenset(
        {
            "-I",
            "-L",
            "-n",
            "-P",
            "-d",
            "-E",
            "-s",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--arg-file",
            "--max-lines",
            "--replace",
            "--eof",
            "--max-chars",
        }
    ),
    "sudo": frozenset(
        {
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
        }
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
_SSH_VALUE_OPTIONS = frozenset(
    {"-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q", "-R",
     "-S", "-W", "-w", "-B"}
)
# Wrappers that feed the command input it reads as arguments: what it operates on is not
# in the command line (`… | xargs rm`).
FEEDERS = frozenset({"xargs", "entr"})
# Package runners: `npx rimraf dist`, `npm exec -- tool`, `uvx ruff`, `pipx run black`.
_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx"})
_RUNNER_SUBCOMMANDS = frozenset(
    {("npm", "exec"), ("npm", "x"), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("yarn", "exec"),
     ("bun", "x"), ("pipx", "run"), ("uv", "run"), ("poetry", "run"), ("pdm", "run"), ("hatch", "run"),
     ("pipenv", "run"), ("conda", "run"), ("mamba", "run"), ("bundle", "exec")}
)
_RUNNER_VALUE_OPTIONS = frozenset(
    {"-p", "--package", "--python", "--with", "--from", "-n", "--name", "--project", "--directory",
     "--env-file", "--extra", "--group", "--spec", "-w", "--workspace", "--prefix"}
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
_OTHER_INTERPRETERS = frozenset(
    {"lua", "luajit", "Rscript", "julia", "osascript", "pwsh", "powershell", "groovy", "tclsh", "wish",
     "guile", "racket", "sbcl", "clisp", "elixir", "erl", "scala", "kotlin", "jshell", "R"}
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
                code = after_options(args[i + 1 :], _VALUE_OPTIONS)
                if code:
                    nested.append(code[0].text)
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
    if depth > MAX_NESTING:
        return
    for command in _simple_commands(script):
        for sub in command.substitutions():
            yield from all_invocations(parse_or_empty(sub), depth + 1)
        invocations, nested = unwrap(command.words)
        yield from invocations
        for item in nested:
            inner = parse_or_empty(item) if isinstance(item, str) else [[SimpleCommand(list(item))]]
            yield from all_invocations(inner, depth + 1)
