"""The `.env`-style files a confined command must not read (secrets.py says which names are
one): in the home, in every folder above each root, and inside each root to a few levels.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hermes_core.sandbox import listing, secrets

# How far below a root `.env` files are looked for (a monorepo's `apps/web/.env`), and
# what is not looked into: dependency trees and build output, which are large.
ENV_SCAN_DEPTH = 3
ENV_SCAN_SKIP = frozenset(
    {".git", "node_modules", ".venv", "venv", "target", "build", "dist", "__pycache__", ".tox", ".mypy_cache"}
)


def env_files(
    home: Path, roots: tuple[Path, ...], *, skip: Callable[[Path], bool] = lambda _: False
) -> list[Path]:
    """`.env`-style files in the home, in every folder above each root and inside each
    root (to `ENV_SCAN_DEPTH` levels); not in a folder above a root that `skip` says is out
    of view anyway (a shared /tmp the sandbox empties: large, and busy)."""
    found: list[Path] = []
    folders = {home}
    for root in roots:
        folders.update(root.parents)
    for folder in folders:
        if not skip(folder):
            found += _env_files_in(folder)
    for root in roots:
        found += _env_files_below(root, ENV_SCAN_DEPTH)
    return found


def _env_files_in(folder: Path) -> list[Path]:
    return [folder / name for name, _ in listing.entries_starting(str(folder), ".env", _env_file_entry)]


def _env_file_entry(name: str, is_dir: bool) -> bool:
    return name.startswith(".env") and secrets.is_env_file(name)


def _env_or_folder_entry(name: str, is_dir: bool) -> bool:
    return (is_dir and name not in ENV_SCAN_SKIP) or _env_file_entry(name, is_dir)


def _env_files_below(root: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    level = [root]
    for _ in range(depth + 1):
        below: list[Path] = []
        for folder in level:
            for name, is_dir in listing.entries(str(folder), _env_or_folder_entry):
                if _env_file_entry(name, is_dir):
                    found.append(folder / name)
                elif is_dir:
                    below.append(folder / name)
        level = below
    return found
