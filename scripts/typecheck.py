"""Type-check `core/` and `hermes_acp/` with mypy, as CI does: `python scripts/typecheck.py`.

The engine's folder `core/` imports as `hermes_core` (setup.py's `package_dir`), and an editable
install reaches it through an import hook that mypy does not run. Checking the folder `core`
instead would name its modules `core.*` while their imports say `hermes_core.*`, so every
engine import would go unchecked. This script gives mypy the real name: a link
`build/typecheck/hermes_core` -> `core/` on the `mypy_path` of pyproject.toml's `[tool.mypy]`,
and the two packages by import name. Paths in mypy's report are given back as `core/...`.
Extra arguments go to mypy; the exit status is mypy's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK_DIR = Path("build/typecheck")  # pyproject.toml's [tool.mypy] mypy_path
ENGINE, FOLDER = "hermes_core", "core"


def ensure_link() -> None:
    link = ROOT / LINK_DIR / ENGINE
    target = Path("..") / ".." / FOLDER
    if link.is_symlink() and Path(link.readlink()) == target:
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(target, target_is_directory=True)


def main(argv: list[str]) -> int:
    ensure_link()
    result = subprocess.run(
        [sys.executable, "-m", "mypy", *argv], cwd=ROOT, capture_output=True, text=True, check=False
    )
    linked = f"{LINK_DIR.as_posix()}/{ENGINE}/"
    sys.stdout.write(result.stdout.replace(linked, f"{FOLDER}/"))
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
