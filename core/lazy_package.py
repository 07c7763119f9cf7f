"""A package put in `sys.modules` with its `__init__` not yet run: for SDKs whose package
`__init__` re-exports everything they have, at a cost start-up or memory should not pay.

Submodules import as usual, so a caller that names the modules it needs
(`acp.connection`, `openai._client`) gets only those and what they import. The first
lookup of a name the package's `__init__` defines (`acp.PROTOCOL_VERSION`,
`openai.AsyncOpenAI`) runs the real `__init__` then, so every reader still sees the whole
package. `tests/test_sdk_import.py` holds it to that. Used for the ACP SDK
(hermes_acp/sdk_import.py) and the openai SDK (core/providers/openai_client.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any


def defer_package_init(name: str) -> None:
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
                if package.__dict__.get("__getattr__") is run_init_on_miss:  # not one the __init__ defined
                    del package.__dict__["__getattr__"]
        if attribute in package.__dict__:
            return package.__dict__[attribute]
        own = package.__dict__.get("__getattr__")
        if own is not None and own is not run_init_on_miss:  # the package's own lazy names
            return own(attribute)
        raise AttributeError(f"module {name!r} has no attribute {attribute!r}")

    package.__getattr__ = run_init_on_miss  # type: ignore[method-assign]
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:  # as the import system does: a subpackage is an attribute of its parent
        setattr(sys.modules[parent], child, package)
