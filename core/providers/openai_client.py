"""The openai SDK's async client, imported without the package's re-exports.

Why: `import openai` runs its package `__init__`, which re-exports every type and
resource the SDK has: ~650 ms and +27 MB here, most of a chat-completions session's
memory at rest. We use the client alone (it authenticates, sets the headers, sends our
body with `post(content=...)` and raises its status errors; core/providers/sdk.py), and
`openai._client` with the packages below deferred (core/lazy_package.py) costs ~180 ms
and +15 MB. A lookup of anything else in them still gets the whole package.
"""

from __future__ import annotations

from typing import Any

from core.lazy_package import defer_package_init

# The packages whose `__init__` re-exports what the client does not need.
DEFERRED = (
    "openai",
    "openai.lib",
    "openai.resources",
    "openai.types",
    "openai.types.chat",
    "openai.types.responses",
)


def async_openai() -> Any:
    """The `AsyncOpenAI` class (importing the SDK: call off the event loop)."""
    for package in DEFERRED:
        defer_package_init(package)
    from openai._client import AsyncOpenAI

    return AsyncOpenAI
