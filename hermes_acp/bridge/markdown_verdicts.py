"""What each Markdown construct that could load something is, decided from the text so
far (`remote_images`): keep it, escape it, or wait for more (`NEED`). Every rule errs
towards escaping: an escaped construct draws the same once rendered."""

from __future__ import annotations

import re

CAP = 512  # characters a construct may stay undecided before it is escaped
SPECIAL = re.compile(r"[!<\n\r\\`]")
CONTAINER = re.compile(r"(?:[ \t]|>|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t]))*")
MARKER_SO_FAR = re.compile(r"\d{1,9}[.)]?|[-*+]")
_BLANK_LINE = re.compile(r"[ \t]*[\n\r]")
_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_LABEL_END = re.compile(r"(?<!\\)\]")
_LOADS = frozenset(
    {
        "img",
        "image",
        "picture",
        "source",
        "video",
        "audio",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "applet",
        "svg",
        "math",
        "input",
        "link",
        "style",
        "script",
        "body",
        "track",
        "meta",
        "base",
        "bgsound",
        "portal",
        "fencedframe",
    }
)
_LOADING_ATTRIBUTE = re.compile(
    r"(?:^|[\s/\"'])(?:src|srcset|href|xlink:href|background|poster|style|data|lowsrc|dynsrc"
    r"|codebase|action|formaction|ping|longdesc|manifest|icon)\s*=",
    re.IGNORECASE,
)

NEED, ESCAPE, KEEP = 0, 1, 2


def width(indent: str) -> int:
    return sum(4 if c == "\t" else 1 for c in indent)


def image(s: str, j: int, final: bool) -> int:
    """After a `!`: escape it if it may start an image."""
    if j == len(s):
        return KEEP if final else NEED
    if s[j] != "[":
        return KEEP
    depth = 0
    k = j
    while k < len(s):
        if k - j > CAP:
            return ESCAPE
        c = s[k]
        if c == "\\":
            k += 2
            continue
        if c in "`<":  # a code span or a tag in the text: where it closes is not ours to guess
            return ESCAPE
        if c in "\n\r":
            end = k + 2 if s.startswith("\r\n", k) else k + 1
            if end > len(s) or (c == "\r" and end == len(s)):
                return ESCAPE if final else NEED  # a `\r` may be half of `\r\n`
            if _BLANK_LINE.match(s, end):
                return KEEP  # the paragraph ended first
        if c == "[":
            if depth:  # a bracket inside: escaping one in there (`![a ![b](u)](v)`) would
                return ESCAPE  # move where this one's text ends
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                if k + 1 == len(s):
                    return ESCAPE if final else NEED
                return ESCAPE if s[k + 1] in "([" else KEEP
        k += 1
    return ESCAPE if final else NEED


def definition(s: str, j: int, final: bool) -> int:
    """A line (in its containers) starting with `[`: escape it if it may define a link,
    whose address an image elsewhere in the message would load."""
    ends = [e for e in (s.find("\n", j), s.find("\r", j)) if e >= 0]
    end = min(ends) if ends else -1
    line = s[j:] if end < 0 else s[j:end]
    close = _LABEL_END.search(line)
    if close is None:  # the label may go on past the line
        return ESCAPE if end >= 0 or final or len(line) > CAP else NEED
    after = close.end()
    if after == len(line):
        if end < 0 and not final:
            return NEED
        return KEEP
    return ESCAPE if line[after] == ":" else KEEP


def line_tag(s: str, j: int, final: bool) -> int:
    """A `<` at a line's start: any tag, comment or declaration could open an HTML block,
    in which a fence is no fence: escaped."""
    if j == len(s):
        return ESCAPE if final else NEED
    return ESCAPE if s[j].isascii() and (s[j].isalpha() or s[j] in "!?/") else KEEP


def inline_tag(s: str, j: int, final: bool) -> int:
    """A `<` inside a line: escaped if it starts a tag that loads something."""
    if j == len(s):
        return KEEP if final else NEED
    name = _TAG_NAME.match(s, j)
    if name is None:
        return KEEP
    e = name.end()
    if e == len(s):
        return ESCAPE if final or e - j > CAP else NEED
    if name.group().lower() in _LOADS:
        return ESCAPE
    if s[e] not in " \t\n\r\f/>":
        return KEEP
    gt = _tag_end(s, e)
    attributes = s[e:] if gt < 0 else s[e:gt]
    if _LOADING_ATTRIBUTE.search(attributes):
        return ESCAPE
    if gt >= 0:
        return KEEP
    return ESCAPE if final or len(attributes) > CAP else NEED


def _tag_end(s: str, e: int) -> int:
    """Where the tag whose attributes start at `e` ends: its `>` outside quotes (`title=">"`
    does not end it), or -1."""
    quote = ""
    for k in range(e, len(s)):
        c = s[k]
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == ">":
            return k
    return -1
