"""git's ignore patterns (gitignore(5)), matched in time linear in the path, whatever the pattern.

The workspace writes these patterns: a cloned repository's `.gitignore`, or a file the model
wrote. Translated to one backtracking regular expression per pattern (as `pathspec` does),
the 27-byte line `a*a*a*a*a*a*a*a*a*a*a*a*a*b` takes hours against a 40-letter name of `a`s,
and Python's `re` holds the GIL while it runs: the watcher's thread froze every session, the
event loop and the exit. Here a pattern is matched one path segment at a time, with a set of
positions in the pattern (so `**` costs segments times pattern segments), and each segment's
glob is a regular expression whose inner stars are atomic: a star before a fixed-width chunk
takes the chunk's leftmost occurrence and never backtracks, which is all a glob needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANY_SEGMENTS = None  # a `**` segment: zero or more whole segments


@dataclass(frozen=True, slots=True)
class IgnorePattern:
    """One line of an ignore file."""

    negated: bool  # `!pattern`: a match re-includes
    directories_only: bool  # `pattern/`
    anchored: bool  # a slash before the end: matched against the whole path, else the last name
    segments: tuple[re.Pattern[str] | None, ...]  # None: `**`

    def matches(self, path: str, *, is_dir: bool) -> bool:
        """Whether the pattern names `path` ('/'-separated, relative to the ignore file's
        folder) itself; what lies below a match is the caller's to judge."""
        if self.directories_only and not is_dir:
            return False
        parts = path.split("/")
        if not self.anchored:
            segment = self.segments[0]
            return segment is not None and segment.fullmatch(parts[-1]) is not None
        return _match_segments(self.segments, parts)


def parse_line(line: str) -> IgnorePattern | None:
    """The pattern a line holds; None for a blank line, a comment or a pattern git discards
    (an unclosed `[`)."""
    line = _trim_trailing_spaces(line)
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    directories_only = line.endswith("/")
    line = line[:-1] if directories_only else line  # one slash: `a//` is not `a/`
    if not line:
        return None
    anchored = "/" in line
    parts = line.removeprefix("/").split("/") if anchored else [line]
    segments: list[re.Pattern[str] | None] = []
    for index, part in enumerate(parts):
        if len(part) >= 2 and part.strip("*") == "" and anchored:  # `***` is git's `**` too
            if index == len(parts) - 1:  # a trailing `/**`: everything inside, not the folder itself
                segments += [_ONE_SEGMENT, _ANY_SEGMENTS]
            elif not segments or segments[-1] is not _ANY_SEGMENTS:
                segments.append(_ANY_SEGMENTS)
            continue
        compiled = segment_glob(part)
        if compiled is None:
            return None
        segments.append(compiled)
    return IgnorePattern(negated, directories_only, anchored, tuple(segments))


def segment_glob(glob: str) -> re.Pattern[str] | None:
    """A regular expression for one path segment's glob (`*`, `?`, `[...]`, `\\x`), safe from
    backtracking; None when a `[` is never closed (git then matches nothing)."""
    chunks: list[str] = [""]  # the fixed-width pieces between stars
    i = 0
    while i < len(glob):
        char = glob[i]
        i += 1
        if char == "*":
            if chunks[-1] or len(chunks) == 1:
                chunks.append("")
            continue
        if char == "\\" and i < len(glob):
            chunks[-1] += re.escape(glob[i])
            i += 1
        elif char == "?":
            chunks[-1] += "."
        elif char == "[":
            bracket = _bracket(glob, i)
            if bracket is None:
                return None
            expression, i = bracket
            chunks[-1] += expression
        else:
            chunks[-1] += re.escape(char)
    if len(chunks) == 1:
        expression = chunks[0]
    else:
        first, *middle, last = chunks
        atomic = "".join(f"(?>.*?{chunk})" for chunk in middle if chunk)
        expression = f"{first}{atomic}.*{last}"
    try:
        return re.compile(expression, re.DOTALL)
    except re.error:  # not expected (every character is escaped); a pattern git would not read
        return None


def _bracket(glob: str, start: int) -> tuple[str, int] | None:
    """A `[...]` beginning after `start - 1`, as a regex class, and the index after it."""
    j = start
    negate = j < len(glob) and glob[j] in "!^"
    if negate:
        j += 1
    body_start = j
    if j < len(glob) and glob[j] == "]":  # a `]` first is a member, not the end
        j += 1
    while j < len(glob) and glob[j] != "]":
        j += 1
    if j >= len(glob):
        return None
    return f"[{'^' if negate else ''}{_class_body(glob[body_start:j])}]", j + 1


def _class_body(inside: str) -> str:
    """A bracket's members as a regex class body, every character escaped. A range that runs
    backwards (`z-a`) matches its first character only, as git's wildmatch does."""
    out: list[str] = []
    k = 0
    while k < len(inside):
        start = inside[k]
        if k + 2 < len(inside) and inside[k + 1] == "-":
            end = inside[k + 2]
            out.append(f"{re.escape(start)}-{re.escape(end)}" if start <= end else re.escape(start))
            k += 3
        else:
            out.append(re.escape(start))
            k += 1
    return "".join(out)


def _trim_trailing_spaces(line: str) -> str:
    """Trailing spaces are dropped unless a backslash quotes them (git's dir.c)."""
    end = len(line)
    while end > 0 and line[end - 1] == " ":
        if end >= 2 and line[end - 2] == "\\":
            break
        end -= 1
    return line[:end]


def _match_segments(pattern: tuple[re.Pattern[str] | None, ...], parts: list[str]) -> bool:
    """Whether the segment patterns name exactly `parts`: positions in the pattern advance
    together over the path's segments, so the work is their product, never exponential."""
    states = _closure(pattern, {0})
    for part in parts:
        advanced: set[int] = set()
        for index in states:
            if index == len(pattern):
                continue
            segment = pattern[index]
            if segment is _ANY_SEGMENTS:
                advanced.add(index)
            elif segment.fullmatch(part) is not None:
                advanced.add(index + 1)
        if not advanced:
            return False
        states = _closure(pattern, advanced)
    return len(pattern) in states


def _closure(pattern: tuple[re.Pattern[str] | None, ...], states: set[int]) -> set[int]:
    """`states` plus every position reached by letting a `**` match no segment."""
    pending = list(states)
    reached = set(states)
    while pending:
        index = pending.pop()
        if index < len(pattern) and pattern[index] is _ANY_SEGMENTS and index + 1 not in reached:
            reached.add(index + 1)
            pending.append(index + 1)
    return reached


_ONE_SEGMENT = re.compile(".+", re.DOTALL)


def star_text(specifier: str) -> re.Pattern[str]:
    """`*` as any run of characters, the rest literal (a permission rule's command text), as a
    regular expression safe from backtracking: each star but the last takes the leftmost
    occurrence of the text after it, atomically."""
    if "*" not in specifier:
        return re.compile(re.escape(specifier), re.DOTALL)
    first, *middle, last = [re.escape(piece) for piece in specifier.split("*")]
    atomic = "".join(f"(?>.*?{piece})" for piece in middle if piece)
    return re.compile(f"{first}{atomic}.*{last}", re.DOTALL)


_STEPS_KEPT = 20_000


class PathGlob:
    """A permission rule's path glob over absolute paths, matched by advancing a set of
    positions in the pattern one character at a time: the work is the path's length times
    the pattern's, whatever the pattern. Tokens: `("lit", c)`, `("one",)` (a character but
    `/`), `("seg",)` (`[^/]*`), `("any",)` (`.*`), `("dirs",)` (`(?:.*/)?`), `("below",)`
    (`(?:/.*)?`)."""

    __slots__ = ("_prefix", "_steps", "_tokens")

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self._tokens = tokens
        # `advance`'s steps, kept: a walk reads the same few position sets over and over
        # (bounded by `_STEPS_KEPT`, whatever the pattern).
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}
        # The literal start (the project's folder, most of a rule) is compared as a string.
        literal = 0
        while literal < len(tokens) and tokens[literal][0] == "lit":
            literal += 1
        self._prefix = "".join(char for _, char in tokens[:literal])

    def fullmatch(self, text: str) -> bool:
        if not text.startswith(self._prefix):
            return False
        # A state is 2 * position + phase; phase 1 is inside a `dirs` or `below` run.
        states = self._closure({2 * len(self._prefix)})
        for char in text[len(self._prefix) :]:
            states = self._closure({nxt for state in states for nxt in self._step(state, char)})
            if not states:
                return False
        return 2 * len(self._tokens) in states

    def advance(self, text: str, states: frozenset[int] | None = None) -> frozenset[int]:
        """The positions in the pattern once `text` is read, from `states` (what this returned
        for the text before it) or from the start; empty: no path starting so can match. A
        walk keeps a folder's (`dir/`), and each name in it then costs its own length."""
        current = frozenset(self._closure({0})) if states is None else states
        steps = self._steps
        for char in text:
            following = steps.get((current, char))
            if following is None:
                if len(steps) > _STEPS_KEPT:
                    steps.clear()
                reached = {nxt for state in current for nxt in self._step(state, char)}
                following = frozenset(self._closure(reached))
                steps[(current, char)] = following
            current = following
            if not current:
                break
        return current

    def accepts(self, states: frozenset[int]) -> bool:
        """Whether `advance` ended where the pattern matches."""
        return 2 * len(self._tokens) in states

    def _step(self, state: int, char: str) -> tuple[int, ...]:
        index, phase = divmod(state, 2)
        if index == len(self._tokens):
            return ()
        kind, literal = self._tokens[index]
        here, after = 2 * index, 2 * (index + 1)
        if kind == "lit":
            return (after,) if char == literal else ()
        if kind == "one":
            return (after,) if char != "/" else ()
        if kind == "seg":
            return (here,) if char != "/" else ()
        if kind == "any":
            return (here,)
        if kind == "dirs":
            return (here,) if char == "/" else (here + 1,)
        # below: a `/` first, then anything
        return (here + 1,) if phase == 1 or char == "/" else ()

    def _closure(self, states: set[int]) -> set[int]:
        pending = list(states)
        reached = set(states)
        while pending:
            index, phase = divmod(pending.pop(), 2)
            if index == len(self._tokens):
                continue
            kind = self._tokens[index][0]
            skips = kind in ("seg", "any", "below") or (kind == "dirs" and phase == 0)
            if skips and 2 * (index + 1) not in reached:
                reached.add(2 * (index + 1))
                pending.append(2 * (index + 1))
        return reached
