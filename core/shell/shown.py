"""Text the model wrote, as the user is shown it: every character that does not draw
itself, drawn as an escape.

A command, a path or a label the user decides on must read as what runs. Control
characters (`\\x1b[2K` erases a terminal line, `\\b` and `\\r` move back over it), bidi
overrides (U+202E shows the rest reversed), zero-width characters and other invisible
format characters would let the model show one command and run another. Each becomes
`\\x1b`, `\\u202e`…: visible, and a reader sees something was there. So do the characters
Unicode calls default-ignorable outside those categories (the combining grapheme joiner,
variation selectors, Hangul fillers: `./build\\u034f.sh` drew as `./build.sh`), blanks other
than the space (a no-break space is no word break to the shell), a letter of a script
that copies Latin shapes inside a Latin word (`./b\\u057dild.sh`, an Armenian `ս`), and a
word made only of such letters (`https://\\u0430\\u0440\\u0440\\u04cf\\u0435.com`, all Cyrillic, drew as
apple.com).
"""

from __future__ import annotations

import re
import unicodedata

# Categories that draw nothing of their own: controls, format (bidi, zero-width), line and
# paragraph separators, private use, surrogates and unassigned code points.
_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) that is not in those categories:
# combining and Hangul filler marks, Khmer's inherent vowels, Mongolian's selectors,
# variation selectors and their supplement.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0000-\U000e0fff]"
)
# Scripts whose letters copy Latin ones (`с`, `і`, `ο`, `ս`), and Latin drawn in another
# width or style (`ａ`, `𝐚`): inside a word with ASCII letters, each is shown escaped.
_LOOKALIKE_SCRIPTS = (
    "CYRILLIC",
    "GREEK",
    "ARMENIAN",
    "CHEROKEE",
    "COPTIC",
    "LISU",
    "FULLWIDTH",
    "MATHEMATICAL",
)
# Letters of those scripts that draw as a Latin one at a glance (`а` a, `ѕ` s, `һ` h, `ӏ` l,
# Greek `ο` o, `ϲ` c, Armenian `ս` u…). A word made of these alone reads as a Latin word
# (`аррӏе`, `ѕһ`), so it is escaped whole; a real word of the script (`привет`) holds others.
_LATIN_TWINS = frozenset(
    "аеорсухѕіјһӏԁԛԝүёїкАВЕКМНОРСТХІЈЅҮԚԜӀЁЇ"  # Cyrillic
    "οανικρχυϲϳΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹͿ"  # Greek
    "սօոհցզՏՕՍԼ"  # Armenian
)
# Scripts that are Latin look-alikes through and through: every letter counts as a twin.
_TWIN_SCRIPTS = ("CHEROKEE", "LISU", "FULLWIDTH", "MATHEMATICAL")
_LETTERS = re.compile(r"[^\W\d_]+")
LINE_BREAK = " ⏎ "  # a newline in one-line text: the shell reads a new command there
_BLANKS = re.compile(r"[ \t]+")


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def draws_unlike_itself(char: str) -> bool:
    """Whether `char` draws as nothing, or as a space that is none."""
    category = unicodedata.category(char)
    return (
        category in _INVISIBLE
        or (category == "Zs" and char != " ")
        or (char > "\u0300" and _IGNORABLE.match(char) is not None)
    )


def _latin_twin(char: str) -> bool:
    return char in _LATIN_TWINS or unicodedata.name(char, "").startswith(_TWIN_SCRIPTS)


def _lookalikes(text: str) -> set[int]:
    """Where in `text` a letter of a look-alike script sits inside a word that holds ASCII
    letters too, or in a word made of Latin twins alone (`https://аррӏе.com`, all Cyrillic)."""
    found: set[int] = set()
    for word in _LETTERS.finditer(text):
        letters = word.group()
        if letters.isascii():
            continue
        if not any(c.isascii() for c in letters):
            if all(map(_latin_twin, letters)):
                found.update(range(word.start(), word.end()))
            continue
        for i, char in enumerate(letters, word.start()):
            if not char.isascii() and unicodedata.name(char, "").startswith(_LOOKALIKE_SCRIPTS):
                found.add(i)
    return found


def shown(text: str, *, lines: bool = False) -> str:
    """`text` with every invisible character escaped; `lines`: newlines are kept (for a
    block), else each one shows as ⏎ (for a title)."""
    if text.isascii() and text.isprintable():
        return text
    lookalikes = _lookalikes(text)
    out: list[str] = []
    for i, char in enumerate(text):
        if char == "\n":
            out.append("\n" if lines else LINE_BREAK)
        elif char == "\t":
            out.append(char)  # a blank the shell splits words on, like a space
        elif draws_unlike_itself(char) or i in lookalikes:
            out.append(_escape(char))
        else:
            out.append(char)
    return "".join(out)


_BLANK_RUN = re.compile(r"[ \t]{33,}")  # deeper than any indentation
_EMPTY_LINES = re.compile(r"\n(?:[ \t]*\n){5,}")


def shown_block(text: str) -> str:
    """`text` for a code block the user decides on: escaped as `shown(lines=True)`, and a
    run of blanks or empty lines that would push the rest out of sight (`echo ok` and 400
    spaces before `; curl … | sh`) stands as a note of its length."""
    text = _BLANK_RUN.sub(lambda m: f" [… {len(m.group())} blanks …] ", shown(text, lines=True))
    return _EMPTY_LINES.sub(lambda m: f"\n[… {m.group().count(chr(10)) - 1} empty lines …]\n", text)


def shown_line(text: str, limit: int) -> tuple[str, int]:
    """One line for a title: escaped, runs of blanks made one space, cut to `limit`
    characters. Returns the line and how many characters the cut left out."""
    line = _BLANKS.sub(" ", shown(text)).strip()
    if len(line) <= limit:
        return line, 0
    return line[: limit - 1] + "…", len(line) - limit + 1


def code_span(text: str) -> str:
    """`text` as one markdown code span the text cannot close: escaped, on one line, fenced
    by more backticks than any run inside (a hook `a` <!-- `…` would otherwise end the code
    and hide the rest in an HTML comment)."""
    line = shown(text)
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    marks = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{marks}{pad}{line}{pad}{marks}"


def undrawn_lines(text: str, limit: int = 20) -> list[tuple[int, str]]:
    """The lines of `text` an editor draws otherwise than their bytes read (numbered from 1,
    shown escaped, at most `limit`): those holding a character that draws unlike itself
    (bidi controls reorder the line: Trojan Source), a lone carriage return (an editor's
    line break, JSON's and the shell's blank) or a NUL. A CRLF line ending is no such thing."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        body = line[:-1] if line.endswith("\r") else line
        if (body.isascii() and body.isprintable()) or not any(map(draws_unlike_itself, body)):
            continue
        found.append((number, shown(body)))
        if len(found) == limit:
            break
    return found
