"""A package put in `sys.modules` with its `__init__` not yet run: for SDKs whose package
`__init__` re-exports everything they have, at a cost start-up or memory should not pay.

Submodules import as usual, so a caller that names the modules it needs
(`acp.connection`, `openai._client`) gets only those and what they import. The first
lookup of a name the package's `__init__` defines (`acp.PROTOCOL_VERSION`,
`openai.AsyncOpenAI`) runs the real `__init__` then, so every reader still sees the whole
package. `tests/test_sdk_import.py` holds it to that.

A package whose `__init__` is nothing but re-exports (`from .beta_message import BetaMessage
as BetaMessage`, line after line: the SDKs' generated `types` packages) never runs it: a
name's lookup imports the one submodule that defines it. The anthropic SDK's client imports
~900 of its 2,667 type modules that way instead of all of them.

Used for the ACP SDK (sdk_import.py). (It was the engine's while the provider SDKs' clients
were imported through it; none is on a path of the server now.)
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
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
    plan = _reexports(spec.origin)
    if plan is not None:
        _resolve_each_name(name, package, *plan)
        return
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
    _register(name, package)


def defer_package_tree(name: str) -> None:
    """`defer_package_init` for the package `name` and every package below it, parents
    first."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return
    for root in spec.submodule_search_locations:
        for folder, folders, files in os.walk(root):  # top-down: a parent comes before its children
            folders[:] = [f for f in folders if f.isidentifier()]  # a folder no import can name
            if "__init__.py" in files:
                relative = os.path.relpath(folder, root)
                defer_package_init(name if relative == "." else f"{name}.{relative.replace(os.sep, '.')}")


def _register(name: str, package: Any) -> None:
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:  # as the import system does: a subpackage is an attribute of its parent
        setattr(sys.modules[parent], child, package)


def _reexports(init_file: str | None) -> tuple[dict[str, tuple[str, str]], list[str]] | None:
    """Each name the `__init__` at `init_file` re-exports -> (its submodule, its name
    there), and its `__all__` (all of them when it has none); None when the file does
    anything else (then it has to run)."""
    if init_file is None or not init_file.endswith("__init__.py"):
        return None
    try:
        with open(init_file, "rb") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, ValueError):
        return None
    names: dict[str, tuple[str, str]] = {}
    declared: list[str] | None = None
    for statement in tree.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            continue
        listed = _all_of_names(statement)
        if listed is not None:
            declared = listed
            continue
        if not (isinstance(statement, ast.ImportFrom) and statement.level == 1):
            return None
        for alias in statement.names:
            if alias.name == "*":
                return None
            if statement.module is None:  # `from . import types`: a submodule
                names[alias.asname or alias.name] = (alias.name, "")
            else:
                names[alias.asname or alias.name] = (statement.module, alias.name)
    return names, list(names) if declared is None else list(declared)


def _all_of_names(statement: ast.stmt) -> list[str] | None:
    """The names of `__all__ = [...]` (strings only), or None for any other statement."""
    if not (
        isinstance(statement, ast.Assign)
        and [getattr(target, "id", None) for target in statement.targets] == ["__all__"]
        and isinstance(statement.value, (ast.List, ast.Tuple))
    ):
        return None
    names = [
        item.value
        for item in statement.value.elts
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
    ]
    return names if len(names) == len(statement.value.elts) else None


def _resolve_each_name(
    name: str, package: Any, reexports: dict[str, tuple[str, str]], star_names: list[str]
) -> None:
    def import_on_lookup(attribute: str) -> Any:
        if attribute == "__all__":  # `from package import *` gets the same names as before
            return list(star_names)
        if attribute not in reexports:
            if importlib.util.find_spec(f"{name}.{attribute}") is not None:
                return importlib.import_module(f"{name}.{attribute}")
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        submodule, defined = reexports[attribute]
        module = importlib.import_module(f"{name}.{submodule}")
        if not defined:
            value = module
        elif hasattr(module, defined):
            value = getattr(module, defined)
        else:  # `from .x import y` where y is a module of x's own
            value = importlib.import_module(f"{name}.{submodule}.{defined}")
        setattr(package, attribute, value)  # the next lookup finds it without us
        return value

    package.__getattr__ = import_on_lookup
    _register(name, package)
