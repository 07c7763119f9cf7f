"""Long-term memory: the store, its limits and locking, the `memory` tool, the prompt."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import pytest

from hermes_core.prompt.context import build_system_prompt
from hermes_core.prompt.memory import MAX_FACT_CHARS, MAX_FILE_BYTES, MemoryFull, MemoryStore
from hermes_core.tools.base import SessionToolState, ToolContext
from hermes_core.tools.memory import MemoryArgs, MemoryTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    (tmp_path / "project").mkdir()
    return MemoryStore(tmp_path / "memory", tmp_path / "project")


def test_add_list_remove_per_scope(store: MemoryStore) -> None:
    assert store.list("user") == [] and store.list("workspace") == []
    assert store.add("user", "Prefers short answers")
    assert store.add("workspace", "Run tests with `pytest -x`")
    assert store.add("workspace", "Never edit generated/ by hand")
    assert not store.add("workspace", "Run tests with `pytest -x`")  # duplicate
    assert store.list("user") == ["Prefers short answers"]
    assert store.list("workspace") == ["Run tests with `pytest -x`", "Never edit generated/ by hand"]

    assert store.remove("workspace", "PYTEST") == 1  # case-insensitive substring
    assert store.list("workspace") == ["Never edit generated/ by hand"]
    assert store.list("user") == ["Prefers short answers"]  # other scope untouched
    assert store.remove("user", "nothing like this") == 0


def test_files_live_where_documented(store: MemoryStore, tmp_path: Path) -> None:
    store.add("user", "a")
    store.add("workspace", "b")
    root = (tmp_path / "project").resolve()
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    user_file = tmp_path / "memory" / "user.md"
    workspace_file = tmp_path / "memory" / "workspaces" / f"{digest}.md"
    assert user_file.read_text().splitlines()[-1] == "- a"
    lines = workspace_file.read_text().splitlines()
    assert str(root) in lines[0]
    assert lines[-1] == "- b"


def test_multiline_fact_becomes_one_bullet_and_hand_notes_survive(store: MemoryStore) -> None:
    path = store.path("workspace")
    path.parent.mkdir(parents=True)
    path.write_text("# my notes\nsome prose written by hand\n- existing fact\n")
    store.add("workspace", "- first line\nsecond   line")
    assert store.list("workspace") == ["existing fact", "first line second line"]
    store.remove("workspace", "existing")
    assert "some prose written by hand" in path.read_text()
    assert store.list("workspace") == ["first line second line"]


def test_persisted_across_instances(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    MemoryStore(tmp_path / "memory", project).add("workspace", "uses poetry")
    MemoryStore(tmp_path / "memory", project).add("user", "likes tea")
    again = MemoryStore(tmp_path / "memory", project)
    assert again.list("workspace") == ["uses poetry"]
    assert again.list("user") == ["likes tea"]
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = MemoryStore(tmp_path / "memory", other)
    assert elsewhere.list("workspace") == []  # workspace memory is per workspace
    assert elsewhere.list("user") == ["likes tea"]  # user memory is shared


def test_fact_too_long_and_empty(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match=r"limit is 500.*Condense"):
        store.add("user", "x" * (MAX_FACT_CHARS + 1))
    with pytest.raises(ValueError, match="empty"):
        store.add("user", "   \n ")
    with pytest.raises(ValueError, match="scope"):
        store.add("team", "fact")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="part of their text"):
        store.remove("user", "  ")
    assert store.list("user") == []


def test_file_full_raises_with_advice_and_keeps_file(store: MemoryStore) -> None:
    fact = "y" * 400
    added = 0
    with pytest.raises(MemoryFull, match=r"Remove entries.*condense"):
        for n in range(100):
            store.add("workspace", f"{n} {fact}")
            added += 1
    assert 10 < added < 25
    assert len(store.list("workspace")) == added
    assert store.path("workspace").stat().st_size <= MAX_FILE_BYTES
    # Room again once something goes.
    store.remove("workspace", "0 y")
    store.add("workspace", "short fact")
    assert store.list("workspace")[-1] == "short fact"


_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hermes_core.prompt.memory import MemoryStore

    memory_dir, root, go, name = sys.argv[1:5]
    store = MemoryStore(Path(memory_dir), Path(root))
    while not Path(go).exists():
        time.sleep(0.001)
    for n in range(40):
        store.add("workspace", f"{name} fact {n}")
    """
)


def test_two_processes_adding_concurrently_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path / "memory"), str(root), str(go), name],
            stderr=subprocess.PIPE,
        )
        for name in ("alpha", "beta")
    ]
    go.touch()  # both start writing at the same moment
    for writer in writers:
        _, err = writer.communicate(timeout=30)
        assert writer.returncode == 0, err.decode()
    facts = MemoryStore(tmp_path / "memory", root).list("workspace")
    assert sorted(facts) == sorted(f"{name} fact {n}" for name in ("alpha", "beta") for n in range(40))


# --- the tool ---------------------------------------------------------------------


@pytest.fixture
def tool(store: MemoryStore) -> MemoryTool:
    return MemoryTool(store)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = LocalWorkspace(WorkspaceScope(tmp_path / "project"))
    return ToolContext(call_id="c1", workspace=workspace, state=SessionToolState(), emit=lambda _e: None)


async def test_tool_add_list_remove(tool: MemoryTool, ctx: ToolContext, store: MemoryStore) -> None:
    assert tool.name == "memory" and tool.kind == "think" and tool.read_only and not tool.needs_approval
    args = tool.parse({"action": "add", "text": "The API lives in src/api"})
    assert args.scope == "workspace"
    assert tool.title(args, ctx.workspace) == "Remember: The API lives in src/api"
    result = await tool.run(args, ctx)
    assert result.ok
    assert "next session" in result.text
    assert store.list("workspace") == ["The API lives in src/api"]

    again = await tool.run(args, ctx)
    assert again.ok and "Already" in again.text

    await tool.run(tool.parse({"action": "add", "scope": "user", "text": "Call me Sam"}), ctx)
    listed = await tool.run(tool.parse({"action": "list", "scope": "user"}), ctx)
    assert listed.ok and "1. Call me Sam" in listed.text

    forget = tool.parse({"action": "remove", "text": "src/api"})
    assert tool.title(forget, ctx.workspace) == "Forget: src/api"
    removed = await tool.run(forget, ctx)
    assert removed.ok and "Removed 1 entry" in removed.text
    assert store.list("workspace") == []
    empty = await tool.run(tool.parse({"action": "list"}), ctx)
    assert "empty" in empty.text


async def test_tool_errors(tool: MemoryTool, ctx: ToolContext, store: MemoryStore) -> None:
    no_text = await tool.run(MemoryArgs(action="add"), ctx)
    assert not no_text.ok and "needs `text`" in no_text.text
    no_match = await tool.run(MemoryArgs(action="remove", text="ghost"), ctx)
    assert not no_match.ok and "ghost" in no_match.text
    too_long = await tool.run(MemoryArgs(action="add", text="z" * 600), ctx)
    assert not too_long.ok and "limit is 500" in too_long.text
    for n in range(40):
        try:
            store.add("workspace", f"entry {n} " + "w" * 400)
        except MemoryFull:
            break
    full = await tool.run(MemoryArgs(action="add", text="one more " + "q" * 300), ctx)
    assert not full.ok
    assert "full" in full.text and "entry 0" in full.text  # shows what could be condensed
    assert tool.title(MemoryArgs(action="add", text="a" * 200), ctx.workspace).endswith("…")


def test_tool_spec_is_a_valid_schema(tool: MemoryTool) -> None:
    spec = tool.spec()
    assert spec.name == "memory"
    assert set(spec.parameters["properties"]) == {"action", "scope", "text"}
    assert spec.parameters["required"] == ["action"]


# --- the system prompt -----------------------------------------------------------


async def test_saved_facts_render_in_the_next_sessions_prompt(
    tool: MemoryTool, ctx: ToolContext, store: MemoryStore, tmp_path: Path
) -> None:
    def prompt() -> str:
        return build_system_prompt(
            cwd=tmp_path / "project",
            extra_roots=[],
            tool_names=["memory"],
            memory=MemoryStore(tmp_path / "memory", tmp_path / "project"),
            now=datetime(2025, 1, 2),
        )

    before = prompt()
    await tool.run(tool.parse({"action": "add", "scope": "user", "text": "Answer in French"}), ctx)
    await tool.run(tool.parse({"action": "add", "text": "Build with `just build`"}), ctx)
    after = prompt()
    assert "Answer in French" not in before
    assert "## Memory" in after
    assert after.index("Answer in French") < after.index("Build with `just build`")
    assert str((tmp_path / "project").resolve()) in after
    assert after == prompt()


def test_a_saved_fact_and_a_workspace_write_are_both_synced_file_and_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One atomic write for memory and the workspace: after a crash the file holds the old
    text or the new, and the rename that put the new one there is on disk too."""
    import os
    import stat

    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    (tmp_path / "project").mkdir()
    MemoryStore(tmp_path / "memory", tmp_path / "project").add("user", "Prefers short answers")
    assert synced == ["file", "directory"]
    assert stat.S_IMODE((tmp_path / "memory" / "user.md").stat().st_mode) == 0o600, "the user's alone"

    synced.clear()
    WorkspaceScope(tmp_path / "project").write_bytes("notes.txt", b"kept\n")
    assert synced == ["file", "directory"]
    assert (tmp_path / "project" / "notes.txt").read_bytes() == b"kept\n"
