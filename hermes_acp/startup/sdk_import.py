"""The ACP SDK, imported in the pieces start-up needs: its package `__init__` deferred.

Why: `import acp.connection` first runs `acp/__init__.py`, which re-exports the whole
SDK and so imports its generated `acp.schema`: ~450 ms of pydantic models, most of
the time from spawn to the `initialize` answer. Answering `initialize` needs only
`acp.connection` (the SDK's JSON-RPC `Connection`, which carries every message) and
`acp.exceptions`. The schema is imported only when a request needs it (plain_params.py).

How: `defer_package_init()`, called by `hermes-acp --stdio` before it imports the
server, registers the `acp` package in `sys.modules` with its
`__path__` but without running its `__init__`. Submodules (`acp.connection`,
`acp.schema`) import as usual. The first lookup of a name the package's `__init__`
defines (`acp.PROTOCOL_VERSION`, `from acp import Agent`) runs the real `__init__`
then, so every reader still sees the whole package (lazy_package.py). The SDK's telemetry
module is imported without OpenTelemetry (below).
"""

from __future__ import annotations

import importlib
import sys

from hermes_acp.startup.lazy_package import defer_package_init as defer

SDK_PACKAGE = "acp"
# Also deferred: watchfiles, whose `__init__` imports its process runner and with it
# `multiprocessing` (~15-40 ms of CPU on every session/new); the watcher imports the two
# submodules it uses (core/changes/watch.py).
DEFERRED = (SDK_PACKAGE, "watchfiles")

# The SDK's telemetry module wraps each request it handles in an OpenTelemetry span
# whenever `opentelemetry` is importable (it is: the SDK depends on it). Nothing in this
# process configures a tracer provider, so every span is a no-op that still costs its calls
# (~10 µs each), and the import ~10 ms of CPU before the first prompt. The module is imported
# with the package hidden, so it takes its own "not installed" branch (no spans); the rest
# of the process still imports opentelemetry as usual.
SDK_TELEMETRY = "acp.telemetry"
TRACING = "opentelemetry.trace"


def defer_package_init(*names: str) -> None:
    """Put the ACP SDK's package (and the other DEFERRED ones, or `names`) in `sys.modules`
    with its `__init__` not yet run."""
    for name in names or DEFERRED:
        defer(name)
    if not names:
        _sdk_telemetry_without_tracing()


def _sdk_telemetry_without_tracing() -> None:
    if SDK_TELEMETRY in sys.modules:
        return
    hidden = sys.modules.get(TRACING)
    sys.modules[TRACING] = None  # type: ignore[assignment]  # `import` raises ModuleNotFoundError
    try:
        importlib.import_module(SDK_TELEMETRY)
    finally:
        if hidden is None:
            del sys.modules[TRACING]
        else:
            sys.modules[TRACING] = hidden
