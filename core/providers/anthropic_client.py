"""The anthropic SDK's async client, imported without the package's re-exports.

Why: `import anthropic` runs its package `__init__`, which imports every resource and
type module it has (~3,300 modules, 64 MB over a bare interpreter), most of an Anthropic
session's memory at rest. We use the client alone (it authenticates, sets the headers,
sends our body with `post(content=...)` and raises its status errors; core/providers/sdk.py)
and its model list. With the package deferred and its `types` and `resources` packages
resolving one name at a time (core/lazy_package.py), that is ~1,400 modules and 39 MB; the
rest is what the client's own modules import. A lookup of anything else still gets it.
"""

from __future__ import annotations

from typing import Any

from core.lazy_package import defer_package_init, defer_package_tree


def async_anthropic() -> Any:
    """The `AsyncAnthropic` class (importing the SDK: call off the event loop)."""
    defer_package_init("anthropic")
    defer_package_tree("anthropic.types")
    defer_package_tree("anthropic.resources")  # `client.models` (the model list) imports one
    from anthropic._client import AsyncAnthropic

    return AsyncAnthropic
