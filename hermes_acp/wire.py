"""A message as the bytes of one line on the wire.

Its own module, with the stdlib `json` only, because two writers must agree to the
byte: the transport (transport.py) and the answer to the first `initialize`, written
before asyncio is imported (early_hello.py).
"""

from __future__ import annotations

import json
from typing import Any


def encode(message: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON. (json escapes newlines inside strings, so a message is
    always exactly one line.)"""
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: let json escape it
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")
