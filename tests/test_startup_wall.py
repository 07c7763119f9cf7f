"""The start-up layer (hermes_acp/startup/) is reached only through its package's names:
no module outside it imports one of its modules, and the engine never imports it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "hermes_acp" / "startup"


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, inside functions and under TYPE_CHECKING too."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
            names.add(node.module)
    return names


def test_only_the_package_names_of_the_start_up_layer_are_imported_from_outside() -> None:
    public = set(__import__("hermes_acp.startup", fromlist=["__all__"]).__all__)
    crossings = []
    for path in sorted([*(ROOT / "hermes_acp").rglob("*.py"), *(ROOT / "core").rglob("*.py")]):
        if LAYER in path.parents:
            continue
        for name in imported_modules(path):
            if not name.startswith("hermes_acp.startup."):
                continue
            if name.removeprefix("hermes_acp.startup.") not in public:
                crossings.append(f"{path.relative_to(ROOT)}: {name}")
    assert crossings == []


def test_the_engine_never_imports_the_protocol_side() -> None:
    upward = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "core").rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] == "hermes_acp"
    ]
    assert upward == []
