"""The todo tool: the plan replaces the previous one and reaches the editor as PlanUpdated."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from hermes_core.events import Event, PlanEntry, PlanUpdated
from hermes_core.tools.base import SessionToolState, ToolContext
from hermes_core.tools.todo import TodoTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope


def make_ctx(root: Path) -> tuple[ToolContext, list[Event]]:
    events: list[Event] = []
    return ToolContext(
        "call-1", LocalWorkspace(WorkspaceScope(root)), SessionToolState(), events.append
    ), events


async def test_todo_replaces_the_plan_and_emits_it(tmp_path: Path) -> None:
    ctx, events = make_ctx(tmp_path)
    tool = TodoTool()
    first = tool.parse(
        {"items": [{"content": "Read the code"}, {"content": "Fix the bug", "priority": "high"}]}
    )
    await tool.run(first, ctx)
    second = tool.parse(
        {
            "items": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress", "priority": "high"},
                {"content": "Run the tests", "priority": "low"},
            ]
        }
    )
    result = await tool.run(second, ctx)

    expected = (
        PlanEntry("Read the code", "completed", "medium"),
        PlanEntry("Fix the bug", "in_progress", "high"),
        PlanEntry("Run the tests", "pending", "low"),
    )
    assert ctx.state.plan == expected
    assert [e for e in events if isinstance(e, PlanUpdated)][-1] == PlanUpdated(expected)
    assert len(events) == 2
    assert result.ok
    assert result.text == (
        "Plan (1/3 completed):\n"
        "[x] Read the code\n"
        "[>] Fix the bug (high priority)\n"
        "[ ] Run the tests (low priority)"
    )
    assert tool.title(second, ctx.workspace) == "Update plan (1/3 done)"


async def test_empty_plan_clears_it(tmp_path: Path) -> None:
    ctx, events = make_ctx(tmp_path)
    ctx.state.plan = (PlanEntry("old"),)
    tool = TodoTool()
    result = await tool.run(tool.parse({"items": []}), ctx)
    assert ctx.state.plan == () and events == [PlanUpdated(())]
    assert result.text == "The plan is now empty."


def test_schema_is_self_contained_and_rejects_bad_status() -> None:
    with pytest.raises(pydantic.ValidationError):
        TodoTool().parse({"items": [{"content": "x", "status": "done"}]})
    items = TodoTool().spec().parameters["properties"]["items"]
    assert items["type"] == "array"
    assert items["items"]["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert "$ref" not in str(TodoTool().spec().parameters)
