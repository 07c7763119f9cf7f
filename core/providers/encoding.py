"""Text that cannot be sent as UTF-8 (lone surrogates: a file read with `surrogateescape`,
a tool's broken output, half of an emoji cut by truncation) made sendable.

JSON encoders refuse such text (`UnicodeEncodeError: surrogates not allowed`), which would
fail the whole turn; a replacement character in its place loses one character instead.
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; surrogate pairs (as a JSON
    decoder may leave them) joined into their character."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean(value: Any) -> Any:
    """A wire payload (dicts, lists, strings) with its strings cleaned; the same objects
    when nothing needed it, so the common case copies nothing."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        out = None
        for key, item in value.items():
            fixed = clean(item)
            if fixed is not item:
                out = dict(value) if out is None else out
                out[key] = fixed
        return value if out is None else out
    if isinstance(value, list):
        fixed_items = [clean(item) for item in value]
        if any(a is not b for a, b in zip(fixed_items, value, strict=True)):
            return fixed_items
        return value
    return value
