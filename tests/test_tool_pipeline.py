"""Every step of a tool call keeps its failures to that call: the turn goes on."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from hermes_core.events import StopReason, ToolCallFinished
from hermes_core.policy.approval import ApprovalRequest, Decision
from hermes_core.tools.base import Tool, ToolContext, ToolResult
from hermes_core.tools.builtin import default_tools
from hermes_core.tools.registry import ToolRegistry
from tests.support.agents import collect, ended, make_agent, of_type
from tests.support.fake_provider import Reply, ToolCallSpec

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("agent_test")]


@pytest.fixture
def workdir(project: Path) -> Path:
    return project


class BrokenApprover:
    async def decide(self, request: ApprovalRequest) -> Decision:
        raise RuntimeError("the approval channel broke")


class PathArgs(BaseModel):
    path: str


class BrokenPaths(Tool[PathArgs]):
    """A tool whose `paths` and `title` raise: a plugin or MCP tool with a bug."""

    name = "broken_paths"
    description = "has a bug"
    args_model = PathArgs
    kind = "edit"
    read_only = False
    needs_approval = True
    runs: ClassVar[int] = 0

    def paths(self, args: PathArgs) -> list[str]:
        raise KeyError(args.path)

    def title(self, args: PathArgs, workspace: object) -> str:
        raise KeyError(args.path)

    async def run(self, args: PathArgs, ctx: ToolContext) -> ToolResult:
        BrokenPaths.runs += 1
        return ToolResult("ran")


async def test_an_approver_that_raises_fails_the_call_closed_and_the_turn_goes_on(fake, workdir):
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("write_file", {"path": "a.txt", "content": "x"})]), Reply(text="ok")]
    )
    agent = make_agent(fake, workdir, approver=BrokenApprover())
    events = await collect(agent.run_turn("write"))
    finished = of_type(events, ToolCallFinished)[0]
    assert finished.status == "failed"
    assert "the approval channel broke" in finished.result
    assert not (workdir / "a.txt").exists()  # not run: nobody approved it
    assert ended(events).stop_reason is StopReason.END_TURN


async def test_a_tool_whose_paths_raise_is_an_error_for_the_model_not_a_crash(fake, workdir):
    BrokenPaths.runs = 0
    fake.script([Reply(tool_calls=[ToolCallSpec("broken_paths", {"path": "x"})]), Reply(text="ok")])
    agent = make_agent(
        fake,
        workdir,
        settings={"default_mode": "yolo"},
        tools=ToolRegistry([*default_tools(), BrokenPaths()]),
    )
    events = await collect(agent.run_turn("go"))
    finished = of_type(events, ToolCallFinished)[0]
    assert finished.status == "failed" and "KeyError" in finished.result
    assert BrokenPaths.runs == 0  # the outside-the-workspace check could not run, so it did not
    assert ended(events).stop_reason is StopReason.END_TURN
    assert "KeyError" in str(fake.requests[-1].body["messages"])
