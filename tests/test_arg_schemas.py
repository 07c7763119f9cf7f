"""The built-in tools' argument schemas come from a committed table (core/tools/arg_schemas.py,
scripts/gen_arg_schemas.py), and no argument model is built before the first tool call."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from hermes_core.tools.arg_schemas import ARG_SCHEMAS
from hermes_core.tools.base import generated_parameters
from hermes_core.tools.builtin import default_tools
from hermes_core.tools.files import ReadFileTool

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import gen_arg_schemas  # noqa: E402


def test_the_table_is_what_pydantic_makes_of_the_argument_models() -> None:
    assert gen_arg_schemas.current_table() == ARG_SCHEMAS, (
        "an argument model changed: run `python scripts/gen_arg_schemas.py`"
    )


def test_every_built_in_tool_is_sent_its_models_schema() -> None:
    for tool in default_tools():
        assert tool.spec().parameters == type(tool)().spec().parameters
        generated = generated_parameters(tool.args_model)
        sent = tool.spec().parameters
        if tool.name == "todo":  # sent with its item schema inlined (core/tools/todo.py)
            assert "$defs" in generated and "$defs" not in sent
        else:
            assert sent == generated, tool.name


def test_a_spec_cannot_change_the_table_it_came_from() -> None:
    # A spec's schema is frozen (the providers resend its encoded bytes while the spec is
    # the same object); a caller that wants another schema changes a copy.
    spec = ReadFileTool().spec()
    with pytest.raises(TypeError):
        spec.parameters["properties"].clear()
    changed = copy.deepcopy(spec.parameters)
    changed["properties"].clear()
    assert ReadFileTool().spec().parameters["properties"], "the table itself was changed"


FRESH_PROCESS = """
import sys
from hermes_core.config import load_settings
from hermes_core.tools.builtin import default_tools
settings = load_settings()
settings.permissions.as_table(), settings.hooks.as_table()
tools = default_tools()
specs = [tool.spec() for tool in tools]
built = sorted(t.args_model.__name__ for t in tools if t.args_model.__pydantic_complete__)
print("built before a call:", built, "plugin scan:", "pydantic.plugin._loader" in sys.modules)
read = tools[0]
read.parse({"path": "a.txt", "offset": 2})
try:
    read.parse({"path": "a.txt", "offset": 0})
except Exception as exc:
    print("refused:", type(exc).__name__)
"""


def test_the_specs_and_settings_build_no_pydantic_model_until_a_call(tmp_path: Path) -> None:
    """A text-only turn needs the specs, the settings and their tables: none of them builds
    a model (the first one built costs ~40 ms of pydantic's plugin scan). The arguments
    are still validated at a call."""
    env = {"HERMES_ACP_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert "built before a call: [] plugin scan: False" in out, out
    assert "refused: ValidationError" in out, out


def test_a_tool_call_is_still_validated() -> None:
    with pytest.raises(ValidationError):
        ReadFileTool().parse({"offset": 3})
