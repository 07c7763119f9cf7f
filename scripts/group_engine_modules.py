#!/usr/bin/env python3
"""Group the engine's flat modules (`core/*.py`) into packages by concept.

    python scripts/group_engine_modules.py [--check]

Mechanical and idempotent, so it can run again on a tree others changed meanwhile: each
module in MOVES that is still at its old place is moved with `git mv` (a package gets an
`__init__.py` saying what it holds), then every reference to it is rewritten in the
tracked text files (core, hermes_acp, tests, benchmarks, scripts, the README):

- dotted names anywhere: imports, lazy imports and logger names in strings, mock targets,
  prose (`hermes_core.turn` -> `hermes_core.loop.turn`; `hermes_core.turn_context` and
  `hermes_core.tools.memory` are other names and stay);
- `from hermes_core import turn [as t]` -> `from hermes_core.loop import turn [as t]`;
- paths: `core/turn.py` -> `core/loop/turn.py`.

No new package is named like a module it replaces, so a rewritten name never matches an
old one again. Then, on the Python files it changed, `ruff check --select I --fix` and
`ruff format`; a line that grew past the line length is listed, to wrap by hand.

`--check` moves and rewrites nothing and exits 1 when something is left to do.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

# The rename's tidying and its report of long lines serve this rewrite as they are.
from rename_engine_package import ENGINE, tidy_and_report

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "core"
SUFFIXES = frozenset({".py", ".md", ".sh", ".toml", ".txt", ".cfg", ".ini", ".yaml", ".yml"})
# Scripts (and their tests) whose examples are about other renames, or name the old places on purpose.
SKIP = frozenset(
    {
        "scripts/group_engine_modules.py",
        "scripts/rename_engine_package.py",
        "tests/test_rename_engine_package.py",
        "tests/test_group_engine_modules.py",
    }
)
SKIP_PREFIXES = ("tests/schema/", "tests/registry_schema/", "editors/")

# package -> (what it holds, {old module: new module name in it})
PACKAGES: dict[str, tuple[str, dict[str, str]]] = {
    "loop": (
        "One turn and what it runs on: the turn's loop, its budget and inbox, the conversation,\n"
        "the model it talks to, the tool calls of a response, compression.",
        {
            "turn": "turn",
            "turn_context": "turn_context",
            "budget": "budget",
            "inbox": "inbox",
            "conversation": "conversation",
            "tool_runner": "tool_runner",
            "tool_waves": "tool_waves",
            "compression": "compression",
            "model_link": "model_link",
            "tool_record": "tool_record",
        },
    ),
    "fence": (
        "Where the agent may read and write: the session's roots, opening beneath them, the files\n"
        'git or the editor run outside the sandbox, what an "always" is bound to, ignore rules.',
        {
            "scope": "scope",
            "beneath": "beneath",
            "protected_paths": "protected_paths",
            "command_files": "command_files",
            "gitignore": "gitignore",
            "ripgrep": "ripgrep",
        },
    ),
    "policy": (
        "Whether a tool call runs: the approval policy per mode, the permission rules, and the\n"
        "command hooks around prompts and tool calls.",
        {
            "approval": "approval",
            "permission_rules": "permission_rules",
            "hooks": "hooks",
            "hook_specs": "hook_specs",
        },
    ),
    "rewind": (
        "Snapshots of the workspace before and after a turn writes, and restoring them (/rewind).",
        {"checkpoints": "checkpoints", "checkpoint_objects": "checkpoint_objects"},
    ),
    "mcp": (
        "The editor's MCP servers: connections, the guard of their processes, their tools.",
        {"mcp_connections": "connections", "mcp_guard": "guard", "mcp_tools": "tools"},
    ),
    "prompt": (
        "What the model is told besides the conversation: the system prompt, context files,\n"
        "skills, memory, the repository they are found from, images it is shown.",
        {
            "context": "context",
            "skills": "skills",
            "memory": "memory",
            "recall": "recall",
            "repository": "repository",
            "images": "images",
        },
    ),
    "execution": (
        "Commands: their options and handles, local subprocesses, background jobs.",
        {"commands": "commands", "processes": "processes", "jobs": "jobs"},
    ),
    "changes": (
        "Files the user changed between turns: the watcher and what it watches.",
        {"watch": "watch", "watch_tree": "watch_tree"},
    ),
}
MOVES: dict[str, str] = {
    old: f"{package}.{new}" for package, (_, modules) in PACKAGES.items() for old, new in modules.items()
}


def move_modules(root: Path, *, dry: bool) -> list[str]:
    """`git mv` each module still at its old place; the moves made (or, dry, to make)."""
    moved = []
    for package, (about, modules) in PACKAGES.items():
        folder = root / FOLDER / package
        for old, new in modules.items():
            source, target = root / FOLDER / f"{old}.py", folder / f"{new}.py"
            if not source.is_file() or target.exists():
                continue
            moved.append(f"{FOLDER}/{old}.py -> {FOLDER}/{package}/{new}.py")
            if dry:
                continue
            folder.mkdir(exist_ok=True)
            init = folder / "__init__.py"
            if not init.exists():
                init.write_text(f'"""{about}"""\n', encoding="utf-8")
                subprocess.run(["git", "add", str(init)], cwd=root, check=True)
            subprocess.run(["git", "mv", str(source), str(target)], cwd=root, check=True)
    return moved


_DOTTED = re.compile(rf"(?<![\w.]){ENGINE}\.({'|'.join(sorted(MOVES, key=len, reverse=True))})(?!\w)")
_FROM_PACKAGE = re.compile(
    rf"\bfrom {ENGINE} import ({'|'.join(sorted(MOVES, key=len, reverse=True))})(?: as (\w+))?(?![\w,])"
)
_PATH = re.compile(rf"(?<![\w/.]){FOLDER}/({'|'.join(sorted(MOVES, key=len, reverse=True))})\.py\b")


def rewrite(text: str) -> str:
    text = _DOTTED.sub(lambda m: f"{ENGINE}.{MOVES[m.group(1)]}", text)
    text = _FROM_PACKAGE.sub(_from_package, text)
    return _PATH.sub(lambda m: f"{FOLDER}/{MOVES[m.group(1)].replace('.', '/')}.py", text)


def _from_package(match: re.Match[str]) -> str:
    old, alias = match.group(1), match.group(2)
    package, new = MOVES[old].rsplit(".", 1)
    name = alias or old
    return f"from {ENGINE}.{package} import {new}" + (f" as {name}" if name != new else "")


def tracked_files(root: Path) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    files = []
    for name in filter(None, listed.decode().split("\0")):
        path = root / name
        if name in SKIP or name.startswith(SKIP_PREFIXES) or path.suffix not in SUFFIXES:
            continue
        if path.is_file():
            files.append(path)
    return files


def planned_rewrites(root: Path) -> dict[Path, str]:
    changes = {}
    for path in tracked_files(root):
        text = path.read_text(encoding="utf-8")
        rewritten = rewrite(text)
        if rewritten != text:
            changes[path] = rewritten
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is left")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root = args.root.resolve()
    moved = move_modules(root, dry=args.check)
    for line in moved:
        print(line, file=sys.stderr)
    changes = planned_rewrites(root)
    for path in sorted(changes):
        print(path.relative_to(root), file=sys.stderr)
        if not args.check:
            path.write_text(changes[path], encoding="utf-8")
    verb = "to change" if args.check else "changed"
    print(f"{len(moved)} modules moved, {len(changes)} files {verb}", file=sys.stderr)
    if args.check:
        return 1 if moved or changes else 0
    tidy_and_report(root, sorted(str(path) for path in changes if path.suffix == ".py"), sorted(changes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
