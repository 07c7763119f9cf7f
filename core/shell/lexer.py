"""Reading the words of a command line the way bash does: quoting, `$'…'`, substitutions,
`${…}`, here-documents and the operators between words.

The lexer keeps what a word will run (its substitutions) apart from what it says, so
`echo "rm -rf /"` is an argument while `echo "$(rm -rf /)"` is a command, and it notes
what the shell will do to each word before a program sees it (its expansions).
The tokens are `hermes_core.shell.tokens`; `hermes_core.shell.parse` builds commands from them.
"""

from __future__ import annotations

import re

from hermes_core.shell.tokens import (
    MAX_PARSE_DEPTH,
    OPERATORS,
    Operator,
    ShellSyntaxError,
    ShellTooDeep,
    Word,
)

_OPERATOR_START = frozenset(o[0] for o in OPERATORS)
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
        self.tokens: list[Word | Operator] = []
        self.heredocs: list[tuple[Operator, Word, bool]] = []
        self.expansions: set[str] = set()  # of the word being read

    def run(self) -> list[Word | Operator]:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "\n":
                self.i += 1
                self.tokens.append(Operator(";"))
                self._heredoc_bodies()
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif s.startswith(("<(", ">("), self.i):
                end = self._skip_paren(self.i + 2)
                self.tokens.append(Word(s[self.i : end], [s[self.i + 2 : end - 1]], expansions={"process"}))
                self.i = end
            elif c in _OPERATOR_START and (op := next(o for o in OPERATORS if s.startswith(o, self.i))):
                self._operator(op)
            else:
                word = self._word()
                is_fd = word.text.isdigit() and not word.quoted and s[self.i : self.i + 1] in ("<", ">")
                if not is_fd:  # `2>` redirects stderr; the 2 is no argument
                    self.tokens.append(word)
        for unfinished, _, _ in self.heredocs:  # a here-document the command never finished
            unfinished.body = ""
        return self.tokens

    def _operator(self, op: str) -> None:
        self.i += len(op)
        token = Operator(op)
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
        s, subs = self.s, list[str]()
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


def tokenize(source: str) -> list[Word | Operator]:
    """The words and operators of a command line, here-documents attached to their `<<`."""
    return _Lexer(source).run()
