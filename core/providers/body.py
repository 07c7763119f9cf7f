"""A request's JSON body written as the SDKs write it, with the history's part encoded once.

An SDK serialises the whole body on every call: `json.dumps` of every message, every turn,
a fifth of a turn's CPU at turn 500. Here each message's wire form is encoded once and
kept beside it (`WireHistory`), and a body is joined from those bytes: a turn encodes what
the history gained and the few small parameters. The bytes are the ones the SDK would
send: its encoder settings, and each API's key order as its SDK writes it (`order`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def dumps(value: Any) -> bytes:
    """`value` as the SDKs encode a body (`openapi_dumps`): compact, UTF-8, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class Encoded(list[Any]):
    """A JSON array that carries its encoding: the items, for code that reads them, and
    `json`, the bytes they encode to, joined from encodings made once per item. Nothing
    may change it after it is made: its bytes would no longer say what it holds."""

    __slots__ = ("json",)

    def __init__(self, items: Iterable[Any], encoded_items: list[bytes]) -> None:
        super().__init__(items)
        self.json = b"[" + b",".join(encoded_items) + b"]"

    def after(self, first: Any) -> Encoded:
        """This array with `first` put before its items (a system message, say)."""
        out = Encoded.__new__(Encoded)
        list.__init__(out, [first, *self])
        out.json = b"[" + dumps(first) + (b"," + self.json[1:] if self else b"]")
        return out


def encode_body(params: dict[str, Any], order: tuple[str, ...]) -> bytes:
    """`params` as a JSON object, its keys in `order` (where the SDK puts each; the
    pseudo-key "extra_body" places that dict's keys), the rest after them as they come.
    `Encoded` values go in as their bytes, the others are encoded here."""
    extra: dict[str, Any] = params.get("extra_body") or {}
    parts: list[bytes] = []

    def add(key: str, value: Any) -> None:
        parts.append(dumps(key) + b":" + (value.json if isinstance(value, Encoded) else dumps(value)))

    for key in order:
        if key == "extra_body":
            for extra_key, value in extra.items():
                add(extra_key, value)
        elif key in params:
            add(key, params[key])
    for key, value in params.items():
        if key not in order and key != "extra_body":
            add(key, value)
    if "extra_body" not in order:
        for extra_key, value in extra.items():
            add(extra_key, value)
    return b"{" + b",".join(parts) + b"}"
