"""scripts/group_engine_modules.py on a small git tree: it moves, rewrites, and a second run
finds nothing left to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import group_engine_modules as grouping


def test_a_name_is_rewritten_only_where_it_names_the_moved_module() -> None:
    text = (
        "from hermes_core.turn import ModelTurn\n"
        "from hermes_core.turn_context import turn_preamble\n"
        "from hermes_core.tools.memory import MemoryTool\n"
        "from hermes_core import checkpoints as checkpoints_module\n"
        "from hermes_core import mcp_tools\n"
        'logger = "hermes_core.mcp_connections"  # see core/mcp_connections.py, core/tools/memory.py\n'
    )
    assert grouping.rewrite(text) == (
        "from hermes_core.loop.turn import ModelTurn\n"
        "from hermes_core.loop.turn_context import turn_preamble\n"
        "from hermes_core.tools.memory import MemoryTool\n"
        "from hermes_core.rewind import checkpoints as checkpoints_module\n"
        "from hermes_core.mcp import tools as mcp_tools\n"
        'logger = "hermes_core.mcp.connections"  # see core/mcp/connections.py, core/tools/memory.py\n'
    )
    assert grouping.rewrite(grouping.rewrite(text)) == grouping.rewrite(text)


def test_the_script_moves_rewrites_and_is_idempotent(tmp_path: Path) -> None:
    (tmp_path / "core" / "tools").mkdir(parents=True)
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "core" / "turn.py").write_text('"""The loop."""\n\nfrom hermes_core.budget import B\n')
    (tmp_path / "core" / "budget.py").write_text("B = 1\n")
    (tmp_path / "core" / "tools" / "memory.py").write_text("from hermes_core.memory import M\n")
    (tmp_path / "core" / "memory.py").write_text("M = 2\n")
    (tmp_path / "README.md").write_text("The loop is `core/turn.py` (`hermes_core.turn`).\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)

    assert grouping.main(["--check", "--root", str(tmp_path)]) == 1
    assert grouping.main(["--root", str(tmp_path)]) == 0

    assert not (tmp_path / "core" / "turn.py").exists()
    assert (
        (tmp_path / "core" / "loop" / "turn.py")
        .read_text()
        .endswith("from hermes_core.loop.budget import B\n")
    )
    assert (tmp_path / "core" / "loop" / "__init__.py").read_text().startswith('"""One turn')
    assert (
        tmp_path / "core" / "tools" / "memory.py"
    ).read_text() == "from hermes_core.prompt.memory import M\n"
    assert (tmp_path / "README.md").read_text() == (
        "The loop is `core/loop/turn.py` (`hermes_core.loop.turn`).\n"
    )
    assert grouping.main(["--check", "--root", str(tmp_path)]) == 0
