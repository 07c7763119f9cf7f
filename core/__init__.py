"""The hermes-acp agent engine.

Knows nothing of ACP or editors. Importing it stays cheap: the public names are
loaded on first use, and provider SDKs (`openai`, `anthropic`) only when a provider
of theirs is built.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Agent": "hermes_core.agent",
    "chat": "hermes_core.library",
    "run_turn": "hermes_core.library",
    "Settings": "hermes_core.config",
    "load_settings": "hermes_core.config",
    "StopReason": "hermes_core.events",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
