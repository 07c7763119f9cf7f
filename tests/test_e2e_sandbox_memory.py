"""A sandboxed command that allocates past the session's memory cap is killed inside its
own cgroup: the server and its next turn carry on, and the model is told why (issue 19)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider
from tests.support.red_team import LOCAL, run_turns, sandboxed, turn

CAP_MB = 64
# Touches every page (a zeroed bytearray would be mapped lazily and never charged).
GREEDY = "python3 -c \"b = b'x' * (512 << 20); print('allocated', len(b))\""


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor-terminal"])
async def test_a_command_past_the_memory_cap_is_killed_and_the_session_goes_on(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    fake.script([*turn(sandboxed(GREEDY, "greedy")), *turn(sandboxed("echo still-here", "after"))])
    env = server_env(home, fake, HERMES_ACP_SANDBOX_MEMORY_MB=str(CAP_MB))
    async with connected(env, capabilities) as (_, client):
        await run_turns(client, project, 2)
    tools = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    greedy, after = tools
    assert f"allocated {512 << 20}" not in greedy, greedy
    if capabilities is LOCAL:  # the agent sees a local command's end and says why
        assert f"memory cap ({CAP_MB} MiB" in greedy, greedy
    assert "still-here" in after, after
