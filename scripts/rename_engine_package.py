#!/usr/bin/env python3
"""Give the engine the import name `hermes_core`; its folder stays `core/`.

    python scripts/rename_engine_package.py [--check]

Installed as top-level `core`, the engine collides with a project's own `core` package (a
common Django app name) in the same venv: pip writes both into site-packages/core/. This
rewrites every reference to the engine's modules, mechanically and idempotently:

- `from core.x import`, `import core.x`, `from core import`, `import core` (also inside
  comma lists and strings, as `python -c` snippets and `-X importtime` checks have them);
- dotted names in strings and prose: lazy imports (`"core.agent"`), logger names, error
  tables, docstrings, the README: `core.<name>` when <name> is one of the engine's modules
  or exported names, so `git -c core.pager=…` and other `core.` words stay as they are;
- the packaging: setup.py maps `hermes_core` onto the folder `core/` (`package_dir`), which
  pyproject's static `packages.find` cannot express, and that table goes; ruff is told that
  `hermes_core` is first-party (no folder has that name for it to find).

Then, on the Python files it changed, `ruff check --select I --fix` (the imports sort anew:
`hermes_acp` now comes before `hermes_core`) and `ruff format`. A line in a string or a comment
that grew past the line length is listed: wrap it by hand.

`--check` rewrites nothing and exits 1 when something is left to rename. Paths (`core/…`)
are never touched: the folder keeps its name.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "core"
ENGINE = "hermes_core"
SUFFIXES = frozenset({".py", ".md", ".sh", ".toml", ".txt", ".cfg", ".ini", ".yaml", ".yml"})
# Files that speak of some other `core` (a user's project) or hold this rename's own examples.
SKIP = frozenset(
    {
        "scripts/rename_engine_package.py",
        "scripts/release_check.py",
        "tests/test_rename_engine_package.py",
        "pyproject.toml",  # its packages table is rewritten below, not renamed
    }
)
SKIP_PREFIXES = ("tests/schema/", "tests/registry_schema/", "editors/vscode/node_modules/")

SETUP_PY = f'''"""Packaging beyond pyproject.toml: the engine's folder `{FOLDER}/` installs as `{ENGINE}`.

A top-level `{FOLDER}` would collide with a project's own `{FOLDER}` package in the same venv
(scripts/rename_engine_package.py wrote this and renamed the imports). Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

ENGINE, FOLDER = "{ENGINE}", "{FOLDER}"

setup(
    package_dir={{ENGINE: FOLDER}},
    packages=[
        *find_packages(include=["hermes_acp", "hermes_acp.*"]),
        *(ENGINE + name[len(FOLDER) :] for name in find_packages(include=[FOLDER, f"{{FOLDER}}.*"])),
    ],
)
'''
_FIND_TABLE = re.compile(r"\n\[tool\.setuptools\.packages\.find\]\n(?:[^\[\n][^\n]*\n|\n(?!\[))*")
ISORT_TABLE = f'[tool.ruff.lint.isort]\nknown-first-party = ["{ENGINE}"]\n'
LINE_LENGTH = 110  # pyproject's [tool.ruff] line-length


def engine_names(root: Path) -> set[str]:
    """What may follow `core.` in a reference to the engine: its modules, its subpackages,
    and the names its __init__ exports."""
    folder = root / FOLDER
    names = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    names |= {path.name for path in folder.iterdir() if (path / "__init__.py").is_file()}
    init = folder / "__init__.py"
    if init.is_file():
        text = init.read_text(encoding="utf-8")
        names |= set(re.findall(rf'"(\w+)":\s*"(?:{FOLDER}|{ENGINE})\.', text))
    return names


def rename_text(text: str, names: set[str]) -> str:
    dotted = re.compile(rf"(?<![\w.]){FOLDER}(?=\.(?:{'|'.join(sorted(names))})\b)")
    text = dotted.sub(ENGINE, text)
    text = re.sub(rf"(?<![\w.])from {FOLDER} import\b", f"from {ENGINE} import", text)
    text = re.sub(
        r"(\bfrom [\w.]+ )?\bimport ([\w.]+(?: as \w+)?(?:, *[\w.]+(?: as \w+)?)*)", _rename_import_list, text
    )
    return text.replace(f"module '{FOLDER}' has no attribute", f"module '{ENGINE}' has no attribute")


def _rename_import_list(match: re.Match[str]) -> str:
    """`import core, core.x as y` -> the bare `core` items renamed (`from m import core` is not ours)."""
    if match.group(1):
        return match.group(0)
    items = [item.strip() for item in match.group(2).split(",")]
    renamed = [re.sub(rf"^{FOLDER}(?= as |$)", ENGINE, item) for item in items]
    if renamed == items:
        return match.group(0)
    separator = ", " if ", " in match.group(2) else ","
    return "import " + separator.join(renamed)


def rename_packaging(root: Path) -> dict[Path, str]:
    """The new text of pyproject.toml (no static `packages.find`) and of setup.py."""
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    changes = {}
    renamed = _FIND_TABLE.sub("", text)
    if ISORT_TABLE not in renamed:
        renamed = renamed.rstrip("\n") + "\n\n" + ISORT_TABLE
    if renamed != text:
        changes[pyproject] = renamed
    setup_py = root / "setup.py"
    if not setup_py.is_file() or setup_py.read_text(encoding="utf-8") != SETUP_PY:
        changes[setup_py] = SETUP_PY
    return changes


def tracked_files(root: Path) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    files = []
    for name in filter(None, listed.split("\0")):
        path = root / name
        if (
            name in SKIP
            or name.startswith(SKIP_PREFIXES)
            or path.suffix not in SUFFIXES
            or not path.is_file()
        ):
            continue
        files.append(path)
    return files


def planned_changes(root: Path) -> dict[Path, str]:
    names = engine_names(root)
    changes = {}
    for path in tracked_files(root):
        text = path.read_text(encoding="utf-8")
        renamed = rename_text(text, names)
        if renamed != text:
            changes[path] = renamed
    changes.update(rename_packaging(root))
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rename nothing; exit 1 if anything is left")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    changes = planned_changes(args.root)
    for path in sorted(changes):
        print(path.relative_to(args.root), file=sys.stderr)
        if not args.check:
            path.write_text(changes[path], encoding="utf-8")
    verb = "to rename" if args.check else "renamed"
    print(f"{len(changes)} files {verb}", file=sys.stderr)
    if args.check:
        return 1 if changes else 0
    python_files = sorted(str(path) for path in changes if path.suffix == ".py" and path.name != "setup.py")
    tidy_and_report(args.root, python_files, sorted(changes))
    return 0


def tidy_and_report(root: Path, python_files: list[str], changed: list[Path]) -> None:
    """Tidy the rewritten Python files, then list the changed lines naming the engine that
    grew past the line length (to wrap by hand)."""
    if python_files:
        tidy(root, python_files)
    for path in changed:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if len(line) > LINE_LENGTH and ENGINE in line:
                print(f"{path.relative_to(root)}:{number}: longer than {LINE_LENGTH}", file=sys.stderr)


def tidy(root: Path, files: list[str]) -> None:
    """Sort the rewritten imports and format the files, with the project's ruff settings."""
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "check", "--select", "I", "--fix", "--quiet", *files], cwd=root, check=False)
    subprocess.run([*ruff, "format", "--quiet", *files], cwd=root, check=True)


if __name__ == "__main__":
    sys.exit(main())
