"""A hook's `Bash(...)` matcher and the approval policy read one call's command line once:
the matcher uses the call's `approval_facts`, not a parse of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_core.policy.hook_specs import HookSpec
from hermes_core.policy.hooks import Hooks
from hermes_core.shell import parse
from hermes_core.tools import terminal
from tests.support.agents import collect, ended, make_agent
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("agent_test")]


async def test_a_matched_call_reads_its_command_line_once(
    fake: FakeProvider, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read = parse.CommandLine.read

    def counted(text: str) -> Any:
        reads.append(text)
        return read(text)

    monkeypatch.setattr(terminal.CommandLine, "read", counted)
    agent = make_agent(fake, project)
    marker = project / "hook-ran"
    agent.connect(hooks=Hooks([HookSpec("pre_tool", f"touch {marker}", "test", "Bash(echo:*)")], project))
    fake.script([Reply(tool_calls=[ToolCallSpec("terminal", {"command": "echo hi"})]), Reply(text="Done.")])
    events = await collect(agent.run_turn("say hi"))
    assert ended(events).text == "Done."
    assert marker.exists()  # the matcher covered the call
    assert reads == ["echo hi"]
