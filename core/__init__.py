"""The hermes-acp agent engine.

Knows nothing of ACP or editors. Importing it stays cheap: the public names are
loaded on first use, and provider SDKs (`openai`, `anthropic`) only when a provider
of theirs is built.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Agent": "core.agent",
    "chat": "core.library",
    "run_turn": "core.library",
    "Settings": "core.config",
    "load_settings": "core.config",
    "StopReason": "core.events",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
