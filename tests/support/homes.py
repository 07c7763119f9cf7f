"""The HOME a test's own server runs with, and the secrets a user keeps in it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def plant(root: Path, files: Mapping[str, str]) -> dict[str, Path]:
    """Writes each file's text below `root`, folders made; the written paths by relative name."""
    written: dict[str, Path] = {}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written[relative] = path
    return written


def user_home(tmp_path: Path, files: Mapping[str, str] | None = None) -> Path:
    """`tmp_path/home`, made, holding `files` (e.g. the secrets a test must keep from the model)."""
    home = tmp_path / "home"
    home.mkdir()
    plant(home, files or {})
    return home
