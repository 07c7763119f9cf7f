"""No tool touches the disk or starts a process on its own: the Workspace port is the only
door (`core/workspace.py`), and it opens every path beneath the session's roots.

A tool that called `open(...)`, `Path.read_text`, `os.open` or `subprocess` itself, or opened a
file with the scope's openers instead of asking the workspace, would be outside the fence the
day someone forgets the check; this test reads every module in `core/tools/` with `ast` and
names each such call, so that tool is caught when it is written, not by an attacker.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "core" / "tools"

# Modules whose every use reaches the disk or starts a process.
_FORBIDDEN_MODULES = frozenset({"subprocess", "shutil", "tempfile", "io", "glob", "fcntl"})
# Engine modules under the port: a tool goes through the workspace instead.
_FORBIDDEN_ENGINE = frozenset(
    {
        "hermes_core.fence.beneath",
        "hermes_core.execution.processes",
        "hermes_core.fence.ripgrep",
        "hermes_core.fence.scope",
    }
)
# The only `os` functions a tool may call: they work on strings, never on the disk.
_PURE_OS = frozenset({"fspath", "fsencode", "fsdecode", "PathLike", "sep", "name"})
_PURE_OS_PATH = frozenset(
    {"join", "normpath", "basename", "dirname", "split", "splitext", "isabs", "relpath", "commonpath", "sep"}
)
# Methods that open, stat, list or change files, or start a process, when called on anything
# but the workspace (`workspace.<name>(...)` is the port).
_DISK_CALLS = frozenset(
    {
        # pathlib.Path
        "read_text",
        "write_text",
        "read_bytes",
        "write_bytes",
        "open",
        "stat",
        "lstat",
        "exists",
        "is_file",
        "is_dir",
        "is_symlink",
        "is_fifo",
        "iterdir",
        "glob",
        "rglob",
        "walk",
        "mkdir",
        "touch",
        "unlink",
        "rmdir",
        "rename",
        "symlink_to",
        "hardlink_to",
        "readlink",
        "chmod",
        "samefile",
        # processes
        "create_subprocess_exec",
        "create_subprocess_shell",
        "subprocess_exec",
        "subprocess_shell",
    }
)
# The scope's openers and path checks: the port's own tools, even when only handed over
# (`asyncio.to_thread(scope.open_file, …)`).
_OPENERS = frozenset(
    {"open_file", "open_parent", "open_for_replace", "read_bytes", "write_bytes", "resolve", "outside"}
)
_FORBIDDEN_NAMES = frozenset(
    {"open", "run_rg", "find_rg", "open_beneath", "replace_in", "start_local_command"}
)


def _receiver(node: ast.expr) -> str:
    """`ctx.workspace.read_text` -> "ctx.workspace"; "" when it is not a plain name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _is_the_port(receiver: str) -> bool:
    return receiver == "workspace" or receiver.endswith(".workspace")


def disk_uses(source: str) -> list[str]:
    """Each place in `source` that touches the disk or starts a process itself, as
    `line: what`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _FORBIDDEN_MODULES or alias.name in _FORBIDDEN_ENGINE:
                    found.append(f"{line}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in _FORBIDDEN_MODULES or module in _FORBIDDEN_ENGINE:
                found.append(f"{line}: from {module} import …")
            found += [f"{line}: import {a.name}" for a in node.names if a.name in _FORBIDDEN_NAMES]
        elif isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES:
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.Attribute):
            receiver = _receiver(node.value)
            if receiver == "os" and node.attr not in _PURE_OS and node.attr != "path":
                found.append(f"{line}: os.{node.attr}")
            elif receiver == "os.path" and node.attr not in _PURE_OS_PATH:
                found.append(f"{line}: os.path.{node.attr}")
            elif node.attr in _OPENERS and not _is_the_port(receiver):
                found.append(f"{line}: {receiver or '…'}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = _receiver(node.func.value)
            if node.func.attr in _DISK_CALLS and not _is_the_port(receiver):
                found.append(f"{line}: {receiver or '…'}.{node.func.attr}()")
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in TOOLS.glob("*.py")))
def test_no_tool_touches_the_disk_outside_the_workspace_port(module: str) -> None:
    uses = disk_uses((TOOLS / module).read_text())
    assert not uses, f"core/tools/{module} reaches the disk itself; use the Workspace port: {uses}"


@pytest.mark.parametrize(
    "line",
    [
        "open(path).read()",
        "Path(p).read_text()",
        "ctx.workspace.scope.resolve(args.path)",
        "ctx.workspace.scope.read_bytes(p, 10)",
        "await asyncio.to_thread(scope.open_file, p)",
        "os.open(p, os.O_RDONLY)",
        "os.path.exists(p)",
        "import subprocess",
        "from hermes_core.fence.ripgrep import run_rg",
        "await asyncio.create_subprocess_exec('rg')",
    ],
)
def test_the_check_sees_a_tool_that_forgets(line: str) -> None:
    assert disk_uses(line)


@pytest.mark.parametrize(
    "line",
    [
        "await ctx.workspace.read_text(args.path, allow_outside=ctx.allow_outside)",
        "await workspace.write_text(args.path, text)",
        "await ctx.workspace.search(path, pattern)",
        "str(workspace.scope.absolute(raw))",
        "os.path.join(a, b)",
    ],
)
def test_the_port_itself_passes(line: str) -> None:
    assert disk_uses(line) == []
