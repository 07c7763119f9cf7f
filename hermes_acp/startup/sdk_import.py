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
then, so every reader still sees the whole package (lazy_package.py).
"""

from __future__ import annotations

from hermes_acp.startup.lazy_package import defer_package_init as defer

SDK_PACKAGE = "acp"
# Also deferred: watchfiles, whose `__init__` imports its process runner and with it
# `multiprocessing` (~15-40 ms of CPU on every session/new); the watcher imports the two
# submodules it uses (core/changes/watch.py).
DEFERRED = (SDK_PACKAGE, "watchfiles")


def defer_package_init(*names: str) -> None:
    """Put the ACP SDK's package (and the other DEFERRED ones, or `names`) in `sys.modules`
    with its `__init__` not yet run."""
    for name in names or DEFERRED:
        defer(name)
