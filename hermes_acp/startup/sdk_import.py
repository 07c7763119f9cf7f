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

import builtins
import importlib
import importlib.util
import sys
import threading
from typing import Any

from hermes_acp.startup.lazy_package import defer_package_init as defer

SDK_PACKAGE = "acp"
# Also deferred: watchfiles, whose `__init__` imports its process runner and with it
# `multiprocessing` (~15-40 ms of CPU on every session/new); the watcher imports the two
# submodules it uses (core/changes/watch.py).
DEFERRED = (SDK_PACKAGE, "watchfiles")

# The SDK's telemetry module wraps each request it handles in an OpenTelemetry span
# whenever `opentelemetry` is importable (it is: the SDK depends on it). Nothing in this
# process configures a tracer provider, so every span is a no-op that still costs its calls
# (~10 µs each), and the import ~10 ms of CPU before the first prompt. The module is run
# with an `__import__` of its own that says opentelemetry is not installed, so it takes its
# "not installed" branch (no spans). Not by a `None` put in `sys.modules` for the while, as
# before: that is the whole process's, and any other thread's import of opentelemetry
# meanwhile (the MCP client's, say) failed with "import of opentelemetry.trace halted".
SDK_TELEMETRY = "acp.telemetry"
TRACING = "opentelemetry"
_telemetry_lock = threading.Lock()


def defer_package_init(*names: str) -> None:
    """Put the ACP SDK's package (and the other DEFERRED ones, or `names`) in `sys.modules`
    with its `__init__` not yet run."""
    for name in names or DEFERRED:
        defer(name)
    if not names:
        _sdk_telemetry_without_tracing()


def _sdk_telemetry_without_tracing() -> None:
    with _telemetry_lock:  # start-up calls this from two threads
        if SDK_TELEMETRY in sys.modules:
            return
        spec = importlib.util.find_spec(SDK_TELEMETRY)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        vars(module)["__builtins__"] = {**vars(builtins), "__import__": _import_without_tracing}
        sys.modules[SDK_TELEMETRY] = module  # as an import does: in place while it runs
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[SDK_TELEMETRY]
            raise
        setattr(sys.modules[SDK_PACKAGE], SDK_TELEMETRY.rpartition(".")[2], module)


def _import_without_tracing(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    """`__import__` for the telemetry module alone: opentelemetry is not there for it."""
    if level == 0 and (name == TRACING or name.startswith(f"{TRACING}.")):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return builtins.__import__(name, globals, locals, fromlist, level)
