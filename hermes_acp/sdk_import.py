"""The ACP SDK, imported in the pieces start-up needs: its package `__init__` deferred.

Why: `import acp.connection` first runs `acp/__init__.py`, which re-exports the whole
SDK and so imports its generated `acp.schema`: ~450 ms of pydantic models, most of
the time from spawn to the `initialize` answer. Answering `initialize` needs only
`acp.connection` (the SDK's JSON-RPC `Connection`, which carries every message) and
`acp.exceptions`. The schema is imported right after the answer, by the warm-up.

How: `defer_package_init()`, called by `hermes-acp --stdio` before it imports the
server, registers the `acp` package in `sys.modules` with its
`__path__` but without running its `__init__`. Submodules (`acp.connection`,
`acp.schema`) import as usual. The first lookup of a name the package's `__init__`
defines (`acp.PROTOCOL_VERSION`, `from acp import Agent`) runs the real `__init__`
then, so every reader still sees the whole package. `tests/test_sdk_import.py` holds
it to that. This is the one package treated so; nothing else is deferred this way.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any

SDK_PACKAGE = "acp"


def defer_package_init(name: str = SDK_PACKAGE) -> None:
    """Put the package `name` in `sys.modules` with its `__init__` not yet run; it runs on
    the first lookup of a name that is not a submodule. Nothing happens when the package
    is imported already or cannot be found."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    lock = threading.RLock()
    ran = False

    def run_init_on_miss(attribute: str) -> Any:
        nonlocal ran
        if not ran and importlib.util.find_spec(f"{name}.{attribute}") is not None:
            # `from acp import schema` asks the package first; a submodule needs no __init__
            return importlib.import_module(f"{name}.{attribute}")
        with lock:
            if not ran:
                ran = True  # the __init__'s own lookups see what it has defined so far
                assert spec.loader is not None
                spec.loader.exec_module(package)
                package.__dict__.pop("__getattr__", None)
        try:
            return package.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    package.__getattr__ = run_init_on_miss  # type: ignore[method-assign]
    sys.modules[name] = package
