"""Regenerate core/tools/arg_schemas.py: the JSON schemas of the built-in tools' arguments,
as pydantic makes them from the argument models, in a table the engine reads instead of
building a model before the first tool call.

    python scripts/gen_arg_schemas.py

tests/test_arg_schemas.py fails when the table and the models disagree: run this after
changing an argument model (a field, a description, a bound).
"""

from __future__ import annotations

import importlib
import pkgutil
import pprint
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "core" / "tools" / "arg_schemas.py"
HEADER = '''"""The JSON schemas of the built-in tools' arguments, generated from their argument models
by scripts/gen_arg_schemas.py (do not edit; tests/test_arg_schemas.py checks it): the
model is sent these without pydantic building a model before the first tool call."""

from typing import Any

ARG_SCHEMAS: dict[str, dict[str, Any]] = '''


def current_table() -> dict[str, dict[str, Any]]:
    """What pydantic makes of every argument model of a tool in hermes_core.tools."""
    import hermes_core.tools
    from hermes_core.tools.base import Tool, generated_parameters, schema_key

    for module in pkgutil.iter_modules(hermes_core.tools.__path__):
        importlib.import_module(f"hermes_core.tools.{module.name}")
    table: dict[str, dict[str, Any]] = {}
    pending: list[type[Tool[Any]]] = list(Tool.__subclasses__())
    while pending:
        tool = pending.pop()
        pending.extend(tool.__subclasses__())
        model = tool.__dict__.get("args_model")
        if model is not None and model.__module__.startswith("hermes_core.tools."):
            table[schema_key(model)] = generated_parameters(model)
    return dict(sorted(table.items()))


def main() -> int:
    table = current_table()
    TABLE.write_text(HEADER + pprint.pformat(table, width=100, sort_dicts=False) + "\n", encoding="utf-8")
    ruff = Path(sys.executable).parent / "ruff"
    subprocess.run([str(ruff), "format", "--quiet", str(TABLE)], check=True)
    print(f"{TABLE.relative_to(ROOT)}: {len(table)} argument models")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
