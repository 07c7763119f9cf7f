"""Round seven of issue 19's hidden red team: hooks, which run the workspace's scripts, and
what they trust. End to end through the real server, a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import write_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOOKS = """
[[hooks.session_start]]
command = "sh ./scripts/setup-hook.sh"

[[hooks.pre_tool]]
command = "sh ./scripts/check.sh"

[[hooks.post_tool]]
command = "echo mine > own-unconfined.txt"
unconfined = true
"""


async def test_a_hook_does_not_run_unconfined_when_the_sandbox_cannot_start(
    fake: FakeProvider, tmp_path: Path
) -> None:
    # Hooks run the workspace's scripts, which the model rewrites unasked in auto: that is
    # why they run in the sandbox. Where the sandbox could not start, every command asks,
    # but hooks ran unconfined: the model's `scripts/check.sh` ran outside, with the
    # user's files and network, unasked in every mode.
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    escaped = tmp_path / "escaped"
    for name in ("setup-hook.sh", "check.sh"):
        (project / "scripts" / name).write_text(f"echo {name} >> {escaped}\n")
    env = server_env(tmp_path / "home", fake, HERMES_ACP_SANDBOX_BWRAP=str(tmp_path / "no-bwrap"))
    write_config(env, HOOKS)
    fake.forget()
    fake.script([Reply(tool_calls=[ToolCallSpec("todo", {"items": []}, id="t1")]), Reply(text="Done.")])
    async with connected(env, NO_CAPABILITIES) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        assert await client.prompt(sid, "plan nothing") == {"stopReason": "end_turn"}
        cards = [u for u in client.session_updates(sid, "tool_call") if u["toolCallId"].startswith("hook_")]
        texts = " ".join(
            item.get("content", {}).get("text", "")
            for u in client.session_updates(sid)
            if u.get("toolCallId", "").startswith("hook_")
            for item in u.get("content") or []
        )
    assert not escaped.exists()
    assert {c["title"] for c in cards} == {
        "Hook session_start: sh ./scripts/setup-hook.sh",
        "Hook pre_tool: sh ./scripts/check.sh",
    }
    assert texts.count("the sandbox cannot start") == 2
    # the user's own `unconfined = true` hook still runs, outside as it says
    assert (project / "own-unconfined.txt").read_text() == "mine\n"
