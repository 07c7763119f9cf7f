"""scripts/rename_engine_package.py: the engine's imports renamed to `hermes_core`, nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "rename_engine_package.py"

BEFORE = '''"""Uses core.turn; `git -c core.pager=less` is git's, core/turn.py a path."""
import core
import core.turn
import json, core, core.providers as providers
from core import Agent
from core.providers.base import ProviderError
from tests.support import core as not_ours
LAZY = {"turn": "core.turn", "x": "core.notamodule"}
log = logging.getLogger("core.providers.base")
SNIPPET = "import core.turn, sys; print(core.Agent, core.watch)"
GIT = ["git", "config", "core.hooksPath", "/tmp/h"]
print(mycore.turn, self.core.turn, score.turn, "%core")
'''
AFTER = '''"""Uses hermes_core.turn; `git -c core.pager=less` is git's, core/turn.py a path."""
import hermes_core
import hermes_core.turn
import json, hermes_core, hermes_core.providers as providers
from hermes_core import Agent
from hermes_core.providers.base import ProviderError
from tests.support import core as not_ours
LAZY = {"turn": "hermes_core.turn", "x": "core.notamodule"}
log = logging.getLogger("hermes_core.providers.base")
SNIPPET = "import hermes_core.turn, sys; print(hermes_core.Agent, hermes_core.watch)"
GIT = ["git", "config", "core.hooksPath", "/tmp/h"]
print(mycore.turn, self.core.turn, score.turn, "%core")
'''
PYPROJECT = """[project]
name = "x"
version = "0"

[tool.setuptools.packages.find]
include = ["core*", "hermes_acp*"]

[tool.pytest.ini_options]
addopts = "-q"
"""


def _tree(root: Path) -> None:
    (root / "core" / "providers").mkdir(parents=True)
    (root / "hermes_acp").mkdir()
    (root / "hermes_acp" / "__init__.py").write_text("")
    (root / "core" / "__init__.py").write_text(
        '_EXPORTS = {"Agent": "core.agent"}\n'
        "def __getattr__(name):\n    raise AttributeError(f\"module 'core' has no attribute {name!r}\")\n"
    )
    for module in ("core/turn.py", "core/watch.py", "core/agent.py", "core/providers/__init__.py"):
        (root / module).write_text("")
    (root / "core" / "providers" / "base.py").write_text(
        "from core.turn import x\nfrom hermes_acp import y\n"
    )
    (root / "snippets.txt").write_text(BEFORE)  # text: ruff leaves it as it is
    (root / "pyproject.toml").write_text(PYPROJECT)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True
    )


def test_the_engine_is_renamed_and_nothing_else(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert _run(tmp_path, "--check").returncode == 1
    assert _run(tmp_path).returncode == 0
    assert (tmp_path / "snippets.txt").read_text() == AFTER
    # imports sorted anew by ruff: hermes_acp before hermes_core, both first-party
    base = (tmp_path / "core" / "providers" / "base.py").read_text()
    assert base == "from hermes_acp import y\nfrom hermes_core.turn import x\n"
    init = (tmp_path / "core" / "__init__.py").read_text()
    assert '"Agent": "hermes_core.agent"' in init and "module 'hermes_core' has no attribute" in init
    assert (tmp_path / "core").is_dir() and not (tmp_path / "hermes_core").exists()  # the folder stays
    pyproject = (tmp_path / "pyproject.toml").read_text()
    assert "packages.find" not in pyproject
    assert '[project]\nname = "x"\nversion = "0"\n\n[tool.pytest' in pyproject
    assert '[tool.pytest.ini_options]\naddopts = "-q"\n' in pyproject
    assert pyproject.endswith('[tool.ruff.lint.isort]\nknown-first-party = ["hermes_core"]\n')
    assert "package_dir={ENGINE: FOLDER}" in (tmp_path / "setup.py").read_text()


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    _tree(tmp_path)
    _run(tmp_path)
    snapshot = {
        path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file() and ".git" not in path.parts
    }
    assert _run(tmp_path, "--check").returncode == 0
    assert _run(tmp_path).returncode == 0
    after = {
        path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file() and ".git" not in path.parts
    }
    assert after == snapshot


def test_the_packaging_installs_the_folder_as_hermes_core(tmp_path: Path) -> None:
    """The setup.py it writes, run by setuptools: `core/` becomes `hermes_core` in the build."""
    _tree(tmp_path)
    _run(tmp_path)
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build", "--build-base", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    built = tmp_path / "out" / "lib"
    assert sorted(path.name for path in built.iterdir()) == ["hermes_acp", "hermes_core"]
    assert "from hermes_core.turn import x\n" in (built / "hermes_core" / "providers" / "base.py").read_text()
