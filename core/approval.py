"""Approvals: the Approver port, the policy per mode, and the dangerous-command rules."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from core.events import ToolKind

if TYPE_CHECKING:
    from core.tools.base import Tool
    from core.workspace import Workspace


class Mode(StrEnum):
    ASK = "ask"  # edits and commands ask
    ACCEPT_EDITS = "accept_edits"  # edits inside the workspace pass, commands ask
    PLAN = "plan"  # read-only: edit and command tools are not offered
    YOLO = "yolo"  # nothing asks except dangerous commands


class Decision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"
    CANCELLED = "cancelled"

    @property
    def allowed(self) -> bool:
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_ALWAYS)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    call_id: str
    tool: str
    title: str  # shows the command or path
    kind: ToolKind
    arguments: dict[str, Any]
    reason: str  # why it asks, in words: "runs a command", "edits a file", "outside the workspace"
    scope: str  # the key an "always" decision is remembered under, e.g. "terminal:git status"
    rule: str | None = None  # the dangerous-command rule that fired, if one did
    outside_paths: tuple[str, ...] = ()  # absolute paths outside the workspace this call touches

    @property
    def dangerous(self) -> bool:
        return self.rule is not None


class Approver(Protocol):
    async def decide(self, request: ApprovalRequest) -> Decision: ...


@dataclass(slots=True)
class ApprovalMemory:
    """The "always" decisions of one session (persisted with it)."""

    allowed: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, list[str]]:
        return {"allowed": sorted(self.allowed), "rejected": sorted(self.rejected)}

    @classmethod
    def from_dict(cls, data: dict[str, list[str]] | None) -> ApprovalMemory:
        data = data or {}
        return cls(set(data.get("allowed", [])), set(data.get("rejected", [])))


# --------------------------------------------------------------------------------------
# Reading shell commands
#
# A small lexer and parser for the subset of shell syntax that decides what runs: simple
# commands, the operators between them (`&&`, `||`, `;`, `|`, `&`, newlines), subshells,
# quoting, `$(…)`/backtick/`<(…)` substitutions, redirections and here-documents. It keeps
# what a word will run (its substitutions) apart from what it says, so `echo "rm -rf /"`
# is an argument while `echo "$(rm -rf /)"` is a command.


class ShellSyntaxError(ValueError):
    """The command could not be read (an unclosed quote, parenthesis or substitution)."""


@dataclass(slots=True)
class Word:
    text: str  # quotes removed; substitutions kept as written
    subs: list[str] = field(default_factory=list)  # command text of each $(…), `…`, <(…), >(…)
    quoted: bool = False


@dataclass(slots=True)
class _Op:
    text: str
    body: str | None = None  # the here-document of `<<` / `<<-`


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word
    body: str | None = None


@dataclass(slots=True)
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


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
_REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", "<", ">"})
_OUTPUT_REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<>", ">"})
_WORD_END = frozenset(" \t\n;&|()<>")
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b", "a": "\a"}


class _Lexer:
    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0
        self.tokens: list[Word | _Op] = []
        self.heredocs: list[tuple[_Op, str, bool]] = []

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
                self.tokens.append(Word(s[self.i : end], [s[self.i + 2 : end - 1]]))
                self.i = end
            elif op := next((o for o in _OPERATORS if s.startswith(o, self.i)), None):
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
            self.heredocs.append((token, delimiter.text, op == "<<-"))

    def _heredoc_bodies(self) -> None:
        for op, delimiter, strip_tabs in self.heredocs:
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
        self.heredocs = []

    def _word(self) -> Word:
        s = self.s
        word = Word("")
        buf: list[str] = []
        while self.i < len(s) and s[self.i] not in _WORD_END:
            c = s[self.i]
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                buf.append(s[self.i + 1 : self.i + 2])
                word.quoted = True
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("unclosed single quote")
                buf.append(s[self.i + 1 : end])
                word.quoted = True
                self.i = end + 1
            elif c == '"':
                word.quoted = True
                self._double(buf, word.subs)
            elif c == "$":
                self._dollar(buf, word.subs, in_double=False)
            elif c == "`":
                self._backtick(buf, word.subs)
            else:
                buf.append(c)
                self.i += 1
        word.text = "".join(buf)
        return word

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
            if not s.startswith("$((", i):  # $(( … )) is arithmetic, not a command
                subs.append(s[i + 2 : end - 1])
            buf.append(s[i:end])
            self.i = end
        elif s.startswith("${", i):
            end = self._skip_brace(i + 2)
            buf.append(s[i:end])
            self.i = end
        elif s.startswith("$'", i) and not in_double:
            self.i = i + 2
            while self.i < len(s) and s[self.i] != "'":
                if s[self.i] == "\\":
                    escaped = s[self.i + 1 : self.i + 2]
                    buf.append(_ANSI_ESCAPES.get(escaped, escaped))
                    self.i += 2
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
            buf.append("$")
            self.i = i + 1

    def _backtick(self, buf: list[str], subs: list[str]) -> None:
        end = self._skip_backtick(self.i + 1)
        inner = self.s[self.i + 1 : end - 1].replace("\\`", "`")
        subs.append(inner)
        buf.append(f"`{inner}`")
        self.i = end

    # The _skip_* helpers take the index just past an opening character and return the
    # index just past its closing one.

    def _skip_paren(self, j: int) -> int:
        s, depth = self.s, 1
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                end = s.find("'", j + 1)
                if end < 0:
                    raise ShellSyntaxError("unclosed single quote")
                j = end + 1
                continue
            if c == '"':
                j = self._skip_double(j + 1)
                continue
            if c == "`":
                j = self._skip_backtick(j + 1)
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise ShellSyntaxError("unclosed parenthesis")

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

    def _skip_brace(self, j: int) -> int:
        s, depth = self.s, 1
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                end = s.find("'", j + 1)
                if end < 0:
                    raise ShellSyntaxError("unclosed single quote")
                j = end + 1
                continue
            if c == '"':
                j = self._skip_double(j + 1)
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise ShellSyntaxError("unclosed ${")


class _Parser:
    def __init__(self, tokens: list[Word | _Op]) -> None:
        self.tokens = tokens
        self.pos = 0

    def script(self, *, nested: bool) -> Script:
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
        return script


def parse_command(source: str) -> Script:
    """The command as pipelines of simple commands and subshells; raises ShellSyntaxError."""
    return _Parser(_Lexer(source).run()).script(nested=False)


def _simple_commands(script: Script) -> Iterator[SimpleCommand]:
    for pipeline in script:
        for element in pipeline:
            if isinstance(element, Subshell):
                yield from _simple_commands(element.body)
            else:
                yield element


# --------------------------------------------------------------------------------------
# What a simple command runs: wrappers unwrapped layer by layer


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_KEYWORDS = _names("! { } if then elif else fi while until do done esac")

# Wrappers run the rest of their arguments as a command; these are their options that
# take a value, so the value is not mistaken for the command.
_WRAPPERS: dict[str, frozenset[str]] = {
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
}
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
_INTERPRETER_CODE_FLAGS: dict[str, str] = {  # letters of options whose value is code, not a file
    "shell": "c",
    "python": "cm",
    "node": "ep",
    "ruby": "e",
    "perl": "eE",
    "php": "r",
}
_VALUE_OPTIONS = frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file", "-W", "-X", "-r", "--require"})
_EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})


def _family(program: str) -> str | None:
    """Which interpreter a program is, if it runs code it is given."""
    if program in _SHELLS:
        return "shell"
    if re.fullmatch(r"python[\d.]*|pypy[\d.]*", program):
        return "python"
    if program in ("node", "nodejs", "bun", "deno"):
        return "node"
    if program in ("ruby", "perl", "php"):
        return program
    return None


@dataclass(frozen=True, slots=True)
class Invocation:
    """One program with its arguments, after assignments and wrappers were taken off."""

    words: tuple[Word, ...]

    @property
    def program(self) -> str:
        first = self.words[0]
        return first.text if first.subs else first.text.rsplit("/", 1)[-1]

    @property
    def args(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words[1:])


Nested = str | list[Word]  # command text to parse, or words that form a command


def _strip_prefix(words: list[Word]) -> list[Word]:
    i = 0
    while i < len(words) and (words[i].text in _KEYWORDS or _ASSIGNMENT.match(words[i].text)):
        i += 1
    return words[i:]


def _after_options(words: list[Word], with_value: frozenset[str]) -> list[Word]:
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


def _layers(words: list[Word]) -> tuple[list[Invocation], list[Nested]]:
    """Each program a command runs in turn (`env X=1 sudo rm -rf /` -> env, sudo, rm), and
    the commands it hands to another interpreter (`bash -c '…'`, `eval …`, `find -exec …`)."""
    invocations: list[Invocation] = []
    nested: list[Nested] = []
    rest = _strip_prefix(words)
    while rest and len(invocations) < 16:
        invocation = Invocation(tuple(rest))
        invocations.append(invocation)
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
            if text.startswith("--split-string="):
                nested.append(" ".join([text.partition("=")[2], *texts[i + 1 :]]))
                return []
    if program == "timeout":
        return _after_options(args, _WRAPPERS[program])[1:]  # the first is the duration
    if program in _WRAPPERS:
        return _after_options(args, _WRAPPERS[program])
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
        command = _after_options(args, frozenset({"-n", "--interval", "-d"}))
        if command:
            nested.append(" ".join(w.text for w in command))
        return []
    if program == "find":
        for i, text in enumerate(texts):
            if text in _EXEC_ACTIONS:
                end = next((j for j in range(i + 1, len(texts)) if texts[j] in (";", "+")), len(texts))
                nested.append(args[i + 1 : end])
        return []
    if _family(program) == "shell":
        i = 0
        while i < len(args) and texts[i].startswith(("-", "+")) and texts[i] not in ("-", "--"):
            if not texts[i].startswith("--") and "c" in texts[i][1:]:
                code = _after_options(args[i + 1 :], _VALUE_OPTIONS)
                if code:
                    nested.append(code[0].text)
                return []
            i += 2 if texts[i] in _VALUE_OPTIONS else 1
    return []


def _reads_code_from_stdin(invocation: Invocation) -> bool:
    """Whether an interpreter runs what is piped into it (`sh`, `bash -s`, `python -`)."""
    family = _family(invocation.program)
    if family is None:
        return False
    code_flags = _INTERPRETER_CODE_FLAGS[family]
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
        if text in ("--eval", "--print", "--command"):
            return False
        if not text.startswith("--") and (set(text[1:]) & set(code_flags)):
            return False
        if family == "shell" and not text.startswith("--") and "s" in text[1:]:
            return True
        i += 2 if text in _VALUE_OPTIONS else 1
    return True


def _all_invocations(script: Script, depth: int = 0) -> Iterator[Invocation]:
    """Every program the script may run, however deeply it is wrapped or substituted."""
    if depth > _MAX_DEPTH:
        return
    for command in _simple_commands(script):
        for word in [*command.words, *(r.target for r in command.redirects)]:
            for sub in word.subs:
                yield from _all_invocations(_parse_or_empty(sub), depth + 1)
        invocations, nested = _layers(command.words)
        yield from invocations
        for item in nested:
            inner = _parse_or_empty(item) if isinstance(item, str) else [[SimpleCommand(list(item))]]
            yield from _all_invocations(inner, depth + 1)


def _parse_or_empty(source: str) -> Script:
    try:
        return parse_command(source)
    except ShellSyntaxError:
        return []


# --------------------------------------------------------------------------------------
# Dangerous-command rules
#
# Each rule is a description the user sees and a test on one invocation. `dangerous_rule`
# applies them to every program a command may run: each part of a chain or pipeline,
# subshells, substitutions, wrapped commands (`sudo`, `env`, `xargs`, `nohup`, …) and code
# handed to a shell (`bash -c`, `eval`, here-documents). A few rules look at more than one
# program (a download piped into a shell) or at redirections, and are applied there.

_MAX_DEPTH = 8

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
_RISKY_WORDS = re.compile(
    r"\b(rm|sudo|doas|su|pkexec|mkfs\S*|fdisk|parted|wipefs|dd|chmod|chown|curl|wget|git|shutdown|"
    r"reboot|halt|poweroff|kill|killall|pkill|find|eval|tee)\b|/dev/|/etc/|:\(\)"
)

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
    if inv.program != "rm":
        return False
    options, operands = _split_options(inv.args)
    recursive = any(o == "--recursive" or set(_short_flags(o)) & {"r", "R"} for o in options)
    return recursive and any(_broad_path(p) for p in operands)


def _rm_no_preserve_root(inv: Invocation) -> bool:
    return inv.program == "rm" and "--no-preserve-root" in inv.args


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
        inv.program in _DOWNLOADERS for sub in word.subs for inv in _all_invocations(_parse_or_empty(sub))
    )


def _runs_download(inv: Invocation) -> bool:
    """`bash <(curl …)`, `sh -c "$(curl …)"`, `eval "$(wget -O- …)"`, `$(curl …)`."""
    if _downloads(inv.words[0]):
        return True
    runs_code = _family(inv.program) is not None or inv.program in ("eval", "source", ".")
    return runs_code and any(_downloads(w) for w in inv.words[1:])


def _git_subcommand(inv: Invocation) -> tuple[str, list[str]]:
    if inv.program != "git":
        return "", []
    args = list(inv.args)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    return (args[i], args[i + 1 :]) if i < len(args) else ("", [])


def _git_force_push(inv: Invocation) -> bool:
    sub, rest = _git_subcommand(inv)
    if sub != "push":
        return False
    options, operands = _split_options(rest)
    forced = any(
        o in ("--force", "--mirror")
        or o.startswith("--force-with-lease")
        or ("f" in _short_flags(o) and not o.startswith("-o"))
        for o in options
    )
    return forced or any(ref.startswith("+") for ref in operands[1:])


def _git_reset_hard(inv: Invocation) -> bool:
    sub, rest = _git_subcommand(inv)
    return sub == "reset" and "--hard" in rest


def _git_clean_dirs(inv: Invocation) -> bool:
    sub, rest = _git_subcommand(inv)
    if sub != "clean":
        return False
    letters = set("".join(_short_flags(o) for o in rest))
    letters |= {"f" for o in rest if o == "--force"} | {"n" for o in rest if o == "--dry-run"}
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
        a in _EXEC_ACTIONS and j + 1 < len(args) and args[j + 1].rsplit("/", 1)[-1] in removers
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


def dangerous_rule(command: str) -> str | None:
    """The description of the first dangerous-command rule the command hits, or None.

    A command that cannot be parsed (an unclosed quote or parenthesis) cannot be checked
    part by part. It counts as dangerous ("could not parse the command") when it mentions
    anything a rule cares about (`rm`, `sudo`, `curl`, `/dev/`, …), so it asks even in
    yolo mode; otherwise it is an ordinary command (the shell will reject it anyway).
    """
    return _check_source(command, 0)


def _check_source(source: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return TOO_DEEP
    if _FORK_BOMB.search(source):  # a function that pipes itself into itself, in the background
        return FORK_BOMB
    try:
        script = parse_command(source)
    except ShellSyntaxError:
        return UNPARSEABLE if _RISKY_WORDS.search(source) else None
    return _check_script(script, depth)


def _check_script(script: Script, depth: int) -> str | None:
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
    for word in [*command.words, *(r.target for r in command.redirects)]:
        for sub in word.subs:
            if hit := _check_source(sub, depth + 1):
                return hit
    for redirect in command.redirects:
        if redirect.op in _OUTPUT_REDIRECTS:
            if _DISK_DEVICE.match(redirect.target.text):
                return DISK_WRITE
            if _SYSTEM_FILE.match(redirect.target.text):
                return SYSTEM_WRITE
    invocations, nested = _layers(command.words)
    for invocation in invocations:
        for rule in RULES:
            if rule.matches(invocation):
                return rule.description
    for item in nested:
        if isinstance(item, str):
            hit = _check_source(item, depth + 1)
        else:
            hit = _check_command(SimpleCommand(list(item)), depth + 1)
        if hit:
            return hit
    if invocations and _family(invocations[-1].program) == "shell":
        for redirect in command.redirects:  # `bash <<EOF … EOF`, `sh <<< "…"`
            code = redirect.body if redirect.op in ("<<", "<<-") else None
            code = redirect.target.text if redirect.op == "<<<" else code
            if code and (hit := _check_source(code, depth + 1)):
                return hit
    return None


def _check_pipe(pipeline: Pipeline, depth: int) -> str | None:
    """`curl … | sh`, and `echo "rm -rf /" | sh` (the echoed text is the code)."""
    downloaded = False
    echoed: str | None = None
    for element in pipeline:
        if isinstance(element, Subshell):
            invocations = list(_all_invocations(element.body))
            last = None
        else:
            invocations = _layers(element.words)[0]
            last = invocations[-1] if invocations else None
        if last is not None and _reads_code_from_stdin(last):
            if downloaded:
                return DOWNLOAD_RUN
            if echoed and _family(last.program) == "shell" and (hit := _check_source(echoed, depth + 1)):
                return hit
        downloaded = downloaded or any(inv.program in _DOWNLOADERS for inv in invocations)
        echoed = None
        if last is not None and last.program in ("echo", "printf"):
            echoed = " ".join(_split_options(last.args)[1])
    return None


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
    family = _family(name)
    if family is not None:
        code_flags = _INTERPRETER_CODE_FLAGS[family]
        for i, text in enumerate(args):
            if family == "python" and text == "-m" and i + 1 < len(args):
                return f"{program} -m {args[i + 1]}"
            if set(_short_flags(text)) & set(code_flags) or text in ("--eval", "--print", "--command"):
                return None  # inline code: every run is different
            if not text.startswith("-"):
                return f"{program} {text}"  # a script file
        return None  # code from stdin
    if name not in _SUBCOMMAND_PROGRAMS:
        return program
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if name == "git" and args[i] in _GIT_VALUE_OPTIONS else 1
    if i >= len(args):
        return program
    subcommand = args[i]
    if (name, subcommand) in _RUNNER_SUBCOMMANDS:
        following = _after_options([Word(a) for a in args[i + 1 :]], frozenset())
        return f"{program} {subcommand} {following[0].text}" if following else f"{program} {subcommand}"
    return f"{program} {subcommand}"


def _writes_file(redirect: Redirect) -> bool:
    if redirect.op in ("<<", "<<-", "<<<", "<", "<&"):
        return False
    target = redirect.target.text
    return not (target in _HARMLESS_DEVICES or (redirect.op in (">&", "<&") and target.isdigit()))


def command_scope(command: str) -> str:
    """What an "always" answer for a command covers: its program and subcommand.

    `git status -s` -> "git status", `npm run test` -> "npm run", `python -m pytest -x` ->
    "python -m pytest", `ls -la` -> "ls", `cd src && make` -> "make" (directory changes are
    left out). Anything an "always" could not safely stretch to cover gets the whole
    normalised command as its scope, so it only ever covers what was seen: compound
    commands with more than one program, substitutions, wrappers (`sudo`, `env`, `xargs`,
    …), leading `VAR=value`, inline code (`python -c`, `bash -c`), redirection into a
    file, subshells and commands that cannot be parsed.
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
            words = [w for w in element.words if w.text not in _KEYWORDS]
            if any(w.subs for w in element.words) or any(_writes_file(r) for r in element.redirects):
                return whole
            if not words:
                continue
            invocation = Invocation(tuple(words))
            if _ASSIGNMENT.match(words[0].text) or invocation.program in _WRAPPERS:
                return whole
            if invocation.program in _DIRECTORY_ONLY:
                moved = True
                continue
            if _layers(words)[1] or invocation.program in _ELEVATORS or invocation.program == "eval":
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


# --------------------------------------------------------------------------------------
# The policy: run, ask or reject one tool call


EDIT_KINDS: frozenset[ToolKind] = frozenset({"edit", "delete", "move"})

_KIND_REASONS: dict[str, str] = {
    "edit": "edits a file",
    "delete": "deletes a file",
    "move": "moves a file",
    "execute": "runs a command",
    "fetch": "fetches from the network",
}


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """What to do with one tool call before it runs."""

    action: Literal["run", "ask", "reject"]
    request: ApprovalRequest | None = None  # set for "ask" and "reject"
    reason: str = ""  # for "reject": the message the model reads
    allow_outside: bool = False  # once approved, the call may touch paths outside the workspace


def scope_key(tool: Tool[Any], args: BaseModel) -> str:
    """The key an "always" decision for this call is remembered under: the tool's name,
    plus what its `approval_scope` narrows it to (`terminal:git status`). A tool whose
    scope is its own name (edits) gets one key for all its calls."""
    inner = tool.approval_scope(args)
    if inner == tool.name or inner.startswith(f"{tool.name}:"):
        return inner
    return f"{tool.name}:{inner}"


def _outside_key(base: str, paths: tuple[Path, ...]) -> str:
    # An "always" for a call outside the workspace covers the same tool scope in exactly
    # the directories seen, never their parents or children: "patch in /etc".
    dirs = sorted({str(p if p.is_dir() else p.parent) for p in paths})
    return f"{base} in {', '.join(dirs)}"


def _subject(key: str) -> str:
    _, _, rest = key.partition(":")
    return rest or key


class ApprovalPolicy:
    """Decides per call whether it runs, asks the user, or is rejected, from the session's
    mode and its remembered "always" decisions.

    Order of the rules, first match wins:
    1. plan mode rejects tools that are not read-only;
    2. a remembered "always reject" rejects;
    3. a dangerous command asks, in every mode and whatever was remembered;
    4. a path outside the workspace asks in every mode, unless "always" was granted for
       this tool scope in that directory;
    5. tools that need no approval run; yolo runs everything; accept_edits runs
       edit/delete/move tools; a remembered "always allow" runs;
    6. otherwise ask.
    """

    __slots__ = ("memory", "mode")

    def __init__(self, mode: Mode, memory: ApprovalMemory) -> None:
        self.mode = mode
        self.memory = memory

    def check(self, tool: Tool[Any], args: BaseModel, workspace: Workspace, *, call_id: str) -> PolicyVerdict:
        base = scope_key(tool, args)
        outside = self._outside_paths(tool, args, workspace)
        key = _outside_key(base, outside) if outside else base
        rule = self._dangerous(tool, args)
        if rule:
            reason = f"dangerous command: {rule}"
        elif outside:
            reason = "outside the workspace"
        else:
            reason = _KIND_REASONS.get(tool.kind, f"uses {tool.name}")
        request = ApprovalRequest(
            call_id=call_id,
            tool=tool.name,
            title=tool.title(args, workspace),
            kind=tool.kind,
            arguments=args.model_dump(mode="json"),
            reason=reason,
            scope=key,
            rule=rule,
            outside_paths=tuple(str(p) for p in outside),
        )
        ask = PolicyVerdict("ask", request, reason, allow_outside=bool(outside))

        if self.mode is Mode.PLAN and not tool.read_only:
            return PolicyVerdict(
                "reject",
                request,
                f"rejected: `{tool.name}` is not available in plan mode, which is read-only. "
                "Finish the plan; the user switches modes to carry it out.",
            )
        for remembered in (base, key):
            if remembered in self.memory.rejected:
                return PolicyVerdict(
                    "reject", request, f"rejected: the user chose to always reject `{_subject(remembered)}`"
                )
        if rule:
            return ask
        if outside:
            if key in self.memory.allowed:
                return PolicyVerdict("run", None, "allowed always outside the workspace", allow_outside=True)
            return ask
        if not tool.needs_approval:
            return PolicyVerdict("run", None, "needs no approval")
        if self.mode is Mode.YOLO:
            return PolicyVerdict("run", None, "yolo mode")
        if self.mode is Mode.ACCEPT_EDITS and tool.kind in EDIT_KINDS:
            return PolicyVerdict("run", None, "edits are accepted in this mode")
        if base in self.memory.allowed:
            return PolicyVerdict("run", None, f"always allowed: `{_subject(base)}`")
        return ask

    def record(self, request: ApprovalRequest, decision: Decision) -> None:
        """Remember an "always" answer under the request's scope.

        ALLOW_ALWAYS on a dangerous request is treated as ALLOW_ONCE: nothing is remembered,
        so neither that command nor anything else under its scope skips a later question
        (`check` asks for dangerous commands regardless, and remembering the scope would
        let the harmless commands sharing it, `rm file`, pass silently on the strength of
        an answer given to `rm -rf /`). A REJECT_ALWAYS is remembered for any request.
        """
        if decision is Decision.ALLOW_ALWAYS and not request.dangerous:
            self.memory.allowed.add(request.scope)
            self.memory.rejected.discard(request.scope)
        elif decision is Decision.REJECT_ALWAYS:
            self.memory.rejected.add(request.scope)
            self.memory.allowed.discard(request.scope)

    @staticmethod
    def _outside_paths(tool: Tool[Any], args: BaseModel, workspace: Workspace) -> tuple[Path, ...]:
        scope = workspace.scope
        seen: dict[Path, None] = {}
        for raw in tool.paths(args):
            resolved = scope.absolute(raw)
            if not scope.contains(resolved):
                seen[resolved] = None
        return tuple(seen)

    @staticmethod
    def _dangerous(tool: Tool[Any], args: BaseModel) -> str | None:
        if tool.kind != "execute" or not tool.needs_approval:
            return None
        command = getattr(args, "command", None)
        return dangerous_rule(command) if isinstance(command, str) else None
