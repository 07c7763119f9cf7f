"""session_search over a real store: this workspace's earlier sessions, never the current one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from hermes_core.events import Event
from hermes_core.messages import Message
from hermes_core.store.sessions import SessionStore
from hermes_core.store.writer import SessionRecord
from hermes_core.tools.base import SessionToolState, ToolContext
from hermes_core.tools.session_search import SessionSearchTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "sessions.db") as opened:
        yield opened


def make_ctx(root: Path) -> ToolContext:
    events: list[Event] = []
    return ToolContext("call-1", LocalWorkspace(WorkspaceScope(root)), SessionToolState(), events.append)


def add_session(store: SessionStore, session_id: str, cwd: str, title: str | None, *texts: str) -> None:
    store.create_session(SessionRecord(id=session_id, cwd=cwd, title=title))
    for text in texts:
        store.append_message(session_id, Message("user", text))


async def test_lists_hits_from_this_workspaces_other_sessions(store: SessionStore, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    add_session(store, "old", cwd, "Fix the flaky login test", "the login test times out on CI", "ok")
    add_session(store, "untitled", cwd, None, "login\n\n   page   redesign")
    add_session(store, "other-project", "/somewhere/else", "Elsewhere", "login flow")
    add_session(store, "current", cwd, "Now", "why does login fail again?")

    tool = SessionSearchTool(store, "current", cwd)
    args = tool.parse({"query": "login"})
    result = await tool.run(args, make_ctx(tmp_path))

    assert result.ok
    lines = result.text.splitlines()
    assert lines[0] == '2 match(es) for "login" in earlier sessions of this workspace:'
    old = store.get_session("old")
    assert old is not None
    date = datetime.fromtimestamp(old.updated_at).strftime("%Y-%m-%d %H:%M")
    assert f'"Fix the flaky login test" ({date}, session old), user message #0:' in result.text
    assert "the **login** test times out on CI" in result.text
    assert '"(untitled)"' in result.text
    assert "**login** page redesign" in result.text  # the snippet is kept on one line
    assert "Elsewhere" not in result.text and "again" not in result.text
    assert result.raw_output is not None
    assert {hit["session_id"] for hit in result.raw_output["hits"]} == {"old", "untitled"}


async def test_says_so_when_nothing_matches(store: SessionStore, tmp_path: Path) -> None:
    add_session(store, "current", str(tmp_path), "Now", "only the current session mentions walrus")
    tool = SessionSearchTool(store, "current", str(tmp_path))
    result = await tool.run(tool.parse({"query": "walrus"}), make_ctx(tmp_path))
    assert result.ok
    assert result.text == 'No earlier session in this workspace mentions "walrus".'


async def test_limit_and_query_syntax_from_the_model(store: SessionStore, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    for i in range(5):
        add_session(store, f"s{i}", cwd, f"Session {i}", f"refactor the parser, part {i}")
    tool = SessionSearchTool(store, "current", cwd)
    result = await tool.run(tool.parse({"query": '"parser" AND (refactor*', "limit": 3}), make_ctx(tmp_path))
    assert result.ok
    assert result.text.startswith('3 match(es) for ""parser" AND (refactor*"')
    assert result.raw_output is not None and len(result.raw_output["hits"]) == 3


async def test_empty_query_is_an_error_and_metadata_fits(store: SessionStore, tmp_path: Path) -> None:
    tool = SessionSearchTool(store, "current", str(tmp_path))
    result = await tool.run(tool.parse({"query": "   "}), make_ctx(tmp_path))
    assert not result.ok
    assert "empty" in result.text

    workspace = LocalWorkspace(WorkspaceScope(tmp_path))
    assert tool.title(tool.parse({"query": "auth bug"}), workspace) == 'Search past sessions: "auth bug"'
    metadata = (tool.name, tool.kind, tool.read_only, tool.needs_approval)
    assert metadata == ("session_search", "search", True, False)
    spec = tool.spec()
    assert spec.parameters["required"] == ["query"]
    assert spec.parameters["properties"]["limit"]["default"] == 10
