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
    """A JSON array that carries its encoding: the items, for code that reads them, and the
    encodings of the items, made once per item and joined only where the body is written
    (`encode_body`: one copy of the history's bytes per call). Nothing may change it after
    it is made: its bytes would no longer say what it holds."""

    __slots__ = ("_encoded",)

    def __init__(self, items: Iterable[Any], encoded_items: list[bytes]) -> None:
        super().__init__(items)
        self._encoded = list(encoded_items)

    @property
    def json(self) -> bytes:
        return b"".join(self.pieces())

    def pieces(self) -> list[bytes]:
        """The array's encoding in pieces to be joined."""
        return [b"[", b",".join(self._encoded), b"]"]

    def after(self, first: Any) -> Encoded:
        """This array with `first` put before its items (a system message, say)."""
        out = Encoded.__new__(Encoded)
        list.__init__(out, [first, *self])
        out._encoded = [dumps(first), *self._encoded]
        return out


def encode_body(params: dict[str, Any], order: tuple[str, ...]) -> bytes:
    """`params` as a JSON object, its keys in `order` (where the SDK puts each; the
    pseudo-key "extra_body" places that dict's keys), the rest after them as they come.
    `Encoded` values go in as their kept bytes, the others are encoded here."""
    extra: dict[str, Any] = params.get("extra_body") or {}
    pieces: list[bytes] = []

    def add(key: str, value: Any) -> None:
        pieces.extend((b"," if pieces else b"{", dumps(key), b":"))
        if isinstance(value, Encoded):
            pieces.extend(value.pieces())
        else:
            pieces.append(dumps(value))

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
    pieces.append(b"}" if pieces else b"{}")
    return b"".join(pieces)
