"""One version: hermes_acp/__init__.py's, in every file that names it (scripts/set_version.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from hermes_acp import __version__
from scripts.registry_entry import ENTRY, read_entry

ROOT = Path(__file__).resolve().parent.parent
SET_VERSION = ROOT / "scripts" / "set_version.py"
EXTENSION = Path("editors/vscode/package.json")
LOCKFILE = Path("editors/vscode/package-lock.json")
VERSION_FILE = Path("hermes_acp/__init__.py")


def _json(root: Path, path: Path) -> dict[str, Any]:
    return json.loads((root / path).read_text(encoding="utf-8"))


def _versions(root: Path) -> dict[str, str]:
    """Every copy of the version under `root`, by where it is."""
    entry, lock = read_entry(root), _json(root, LOCKFILE)
    namespace: dict[str, Any] = {}
    exec((root / VERSION_FILE).read_text(encoding="utf-8"), namespace)
    return {
        "__version__": namespace["__version__"],
        "agent.json version": entry["version"],
        "agent.json uvx pin": entry["distribution"]["uvx"]["package"].rpartition("@")[2],
        "package.json": _json(root, EXTENSION)["version"],
        "package-lock.json": lock["version"],
        "package-lock.json root package": lock["packages"][""]["version"],
    }


def test_every_copy_of_the_version_agrees() -> None:
    assert set(_versions(ROOT).values()) == {__version__}, _versions(ROOT)


def test_pyproject_takes_the_version_from_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "hermes_acp.__version__"}


def test_set_version_moves_every_copy_and_nothing_else(tmp_path: Path) -> None:
    for path in (VERSION_FILE, ENTRY, EXTENSION, LOCKFILE):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    before = {path: _json(tmp_path, path) for path in (ENTRY, EXTENSION)}
    done = subprocess.run(
        [sys.executable, str(SET_VERSION), "12.3.4", "--root", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert set(_versions(tmp_path).values()) == {"12.3.4"}
    entry = _json(tmp_path, ENTRY)
    assert entry["distribution"]["uvx"]["package"] == "hermes-acp-agent@12.3.4"
    assert {**entry, "version": "", "distribution": {}} == {
        **before[ENTRY],
        "version": "",
        "distribution": {},
    }
    assert {**_json(tmp_path, EXTENSION), "version": ""} == {**before[EXTENSION], "version": ""}
    # a second run changes nothing; a version the registry would refuse changes nothing either
    snapshot = {path: (tmp_path / path).read_bytes() for path in (VERSION_FILE, ENTRY, EXTENSION, LOCKFILE)}
    for argv in (["12.3.4"], ["1.2"]):
        subprocess.run(
            [sys.executable, str(SET_VERSION), *argv, "--root", str(tmp_path)], capture_output=True
        )
        assert {path: (tmp_path / path).read_bytes() for path in snapshot} == snapshot
