"""The import graph of the engine (`core/`, imported as `hermes_core`) and the protocol
side (`hermes_acp/`), read from the source: no circles, and no import up the layers.

Every import counts: at the top of a module, inside a function, under `TYPE_CHECKING`.
An import of `a.b.c` also runs the `__init__` of `a` and `a.b`, so a module depends on
the packages above what it names as well, except the packages holding the importer itself:
Python ran those before the importer, so a sibling's import adds no dependency on them
(a package's `__init__` may name its own modules for the type checker). A circle is
reported as its modules; an import up the layers as importer -> imported.

The layers, lowest first (README, Architecture): a module may import its own layer and
the layers below it, never one above. A module's layer is that of the longest name
below that names it or a package holding it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"hermes_core": ROOT / "core", "hermes_acp": ROOT / "hermes_acp"}

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base: what everything speaks",
        (
            "hermes_core.errors",
            "hermes_core.messages",
            "hermes_core.models",
            "hermes_core.events",
            "hermes_core.config",
            "hermes_core.config_plain",
            "hermes_core.credentials",
            "hermes_core.private_files",  # the home, store and logs: the user's alone
            "hermes_core.lazy_package",
            "hermes_core.prompt.images",
            "hermes_core.prompt.image_size",  # an image's size from its header, in plain Python
            "hermes_core.prompt.image_child",  # the confined child that decodes (Pillow)
            "hermes_core.loop.budget",
            "hermes_core.loop.conversation",
            "hermes_core.loop.inbox",
            "hermes_core.prompt.repository",
            "hermes_core.policy.hook_specs",
            "hermes_core.sandbox.relocated_secrets",
            "hermes_core.sandbox.index_configs",
            "hermes_core.sandbox.caches",  # the default cache list the settings start from: data only
            "hermes_core",  # the package itself: its names are loaded on first use, by name (no import)
        ),
    ),
    (
        "parts: services of their own, knowing nothing of tools or the fence",
        (
            "hermes_core.providers",
            "hermes_core.store",
            "hermes_core.shell",
            "hermes_core.fence.gitignore",
            "hermes_core.fence.wildmatch",
            "hermes_core.fence.beneath",
            "hermes_core.rewind.checkpoint_objects",
            "hermes_core.loop.turn_context",
            "hermes_core.prompt.memory",
            "hermes_core.prompt.recall",
            "hermes_core.loop.model_link",
            "hermes_core.changes.watch",
            "hermes_core.changes.watch_tree",
            "hermes_core.changes.watch_shared",  # one kernel watcher per workspace, shared by its sessions
            "hermes_core.changes.inotify",
            "hermes_core.loop.tool_record",  # what the store keeps of a tool call: events, from and back
        ),
    ),
    (
        "fence: the roots, the sandbox, commands, the danger rules",
        (
            "hermes_core.sandbox",
            "hermes_core.fence.scope",
            "hermes_core.execution.commands",
            "hermes_core.execution.child",
            "hermes_core.execution.local_command",
            "hermes_core.execution.processes",
            "hermes_core.workspace",
            "hermes_core.fence.rg_stall",  # an rg blocked for good on a FIFO
            "hermes_core.fence.rg_output",  # rg's output made into matches and names, off the loop
            "hermes_core.fence.ripgrep",  # the port's listing and search
            "hermes_core.execution.jobs",
            "hermes_core.command_rules",
            "hermes_core.fence.runs_outside",
            "hermes_core.fence.version_files",
            "hermes_core.fence.inert_options",
            "hermes_core.fence.named_paths",
            "hermes_core.fence.binding_digest",
            "hermes_core.fence.git_code_files",
            "hermes_core.fence.workspace_programs",
            "hermes_core.fence.unconfined_env",
            "hermes_core.fence.command_files",
            "hermes_core.fence.protected_paths",
            "hermes_core.prompt.image_decoder",  # downscaling in a child the sandbox confines
        ),
    ),
    (
        "tools: what the model can call, and what decides whether it may",
        (
            "hermes_core.tools",
            "hermes_core.mcp.tools",
            "hermes_core.mcp.guard",
            "hermes_core.mcp.server_place",  # where a stdio server starts: not the workspace
            "hermes_core.mcp.server_link",
            "hermes_core.mcp.connections",
            "hermes_core.policy.permission_rules",
            "hermes_core.policy.permission_rule",
            "hermes_core.policy.rule_files",
            "hermes_core.policy.rule_matching",
            "hermes_core.policy.sandbox_escapes",
            "hermes_core.policy.approval",
            "hermes_core.policy.hooks",
            "hermes_core.rewind.checkpoints",
            "hermes_core.rewind.file_list",
            "hermes_core.rewind.rewinding",
            "hermes_core.prompt.skills",
            "hermes_core.prompt.context",
        ),
    ),
    (
        "loop: one turn",
        (
            "hermes_core.loop.tool_waves",
            "hermes_core.loop.prepared_calls",
            "hermes_core.loop.always_guard",
            "hermes_core.loop.tool_runner",
            "hermes_core.loop.compression",
            "hermes_core.loop.turn",
        ),
    ),
    ("agent: a conversation and what it is built of", ("hermes_core.agent", "hermes_core.library")),
]
PROTOCOL_LAYER = "protocol: hermes_acp, above the whole engine"


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(tree: ast.AST) -> Iterator[str]:
    """Every module name the source imports, wherever the import statement is."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, "the project imports absolutely"
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for imported in imported_names(ast.parse(path.read_text(), str(path))):
            graph[name] |= {m for m in _running(imported, known, name) if m != name}
    return graph


def _running(imported: str, known: dict[str, Path], importer: str) -> set[str]:
    """The project's modules an import runs: the module named and the packages above it
    that were not already running when the importer was (its own packages)."""
    parts = imported.split(".")
    above = {".".join(parts[:i]) for i in range(1, len(parts))}
    holding = {package for package in above if importer.startswith(f"{package}.")}
    return ({imported} | above - holding) & known.keys()


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> int:
    if module == "hermes_acp" or module.startswith("hermes_acp."):
        return len(LAYERS)
    best: tuple[int, int] | None = None  # (length of the matching name, layer)
    for number, (_, names) in enumerate(LAYERS):
        for name in names:
            names_it = module == name or (name != "hermes_core" and module.startswith(f"{name}."))
            if names_it and (best is None or len(name) > best[0]):
                best = (len(name), number)
    assert best is not None, f"{module} is in no layer: add it to LAYERS (and the README)"
    return best[1]


def layer_name(number: int) -> str:
    return PROTOCOL_LAYER if number == len(LAYERS) else LAYERS[number][0]


def test_the_import_graph_has_no_circles() -> None:
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def folders(graph: dict[str, set[str]]) -> set[str]:
    """Packages whose `__init__` imports nothing of the project: a folder, not a dependency
    on what the folder holds (running it runs nothing), in no layer of its own."""
    return {m for m, path in modules().items() if path.name == "__init__.py" and not graph[m]}


def test_no_module_imports_a_layer_above_its_own() -> None:
    graph = import_graph()
    upward = [
        f"{source} ({layer_name(layer_of(source))}) -> {target} ({layer_name(layer_of(target))})"
        for source, targets in sorted(graph.items())
        for target in sorted(targets - folders(graph))
        if layer_of(target) > layer_of(source)
    ]
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def test_every_engine_module_has_a_layer() -> None:
    for module in modules().keys() - folders(import_graph()):
        layer_of(module)  # raises for a module no layer names


# The checks must be able to fail: each finds what it looks for in a graph that has it.


def test_a_circle_through_a_function_level_or_type_checking_import_is_found() -> None:
    source = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from hermes_core.b import B
def f():
    import hermes_core.c
"""
    names = set(imported_names(ast.parse(source)))
    assert {"hermes_core.b", "hermes_core.c"} <= names
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("source", "target", "upward"),
    [
        ("hermes_core.store.writer", "hermes_core.tools.delegate", True),
        ("hermes_core.config", "hermes_core.sandbox.bwrap", True),
        ("hermes_core.loop.turn", "hermes_acp.session.turn", True),
        ("hermes_core.config", "hermes_core.sandbox.caches", False),
        ("hermes_acp.session.turn", "hermes_core.agent", False),
    ],
)
def test_the_layers_tell_up_from_down(source: str, target: str, upward: bool) -> None:
    assert (layer_of(target) > layer_of(source)) is upward
