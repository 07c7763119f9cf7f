"""Round thirteen of issue 19's hidden red team: a permission rule for one MCP server.
`allow = ["mcp__github"]` covered every tool whose name starts with `mcp__github__`, and
a server the editor names `github (work)` has its tools named `mcp__github__work___…`
(each character outside [A-Za-z0-9_-] becomes `_`): its tools ran unasked on the strength
of a rule written for another server. End to end through the real server, a scripted
model, the test MCP server over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.mcp_entries import stdio_entry
from tests.support.server_setup import write_config

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize("rule", ["mcp__github", "mcp__github__*"])
@pytest.mark.parametrize("other", ["github (work)", "github_"])
async def test_a_rule_for_one_mcp_server_covers_no_other_server_named_like_it(
    fake: FakeProvider, home: Path, project: Path, rule: str, other: str
) -> None:
    asked: list[str] = []

    def user(params: dict[str, Any]) -> str:
        asked.append(params["toolCall"]["toolCallId"])
        return "reject_once"

    other_tool = "mcp__" + "".join(c if c.isalnum() or c in "_-" else "_" for c in other) + "__where"
    env = server_env(home, fake)
    write_config(env, f'[permissions]\nallow = ["{rule}"]\n')
    calls = [ToolCallSpec("mcp__github__where", {}, id="named"), ToolCallSpec(other_tool, {}, id="other")]
    fake.script([Reply(tool_calls=calls), Reply(text="Done.")])
    async with connected(env, permission=user) as (_, client):
        params = {"cwd": str(project), "mcpServers": [stdio_entry("github"), stdio_entry(other)]}
        sid = (await client.request("session/new", params))["sessionId"]
        assert await client.prompt(sid, "where are you?") == {"stopReason": "end_turn"}

    assert asked == ["other"]  # the server the rule names ran unasked; the other asked
    results = {
        m["tool_call_id"]: m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"
    }
    assert "rejected" in str(results["other"]).lower(), results


async def test_a_deny_rule_for_all_of_a_servers_tools_is_not_ignored(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # `mcp__server__*`, the README's spelling for all of a server's tools, could not be
    # read (the star) and was ignored with a line in the log: in yolo the denied tool ran.
    env = server_env(home, fake)
    write_config(env, '[permissions]\ndeny = ["mcp__github__*"]\n')
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("mcp__github__where", {}, id="denied")]), Reply(text="Done.")]
    )
    async with connected(env) as (_, client):
        params = {"cwd": str(project), "mcpServers": [stdio_entry("github")]}
        sid = (await client.request("session/new", params))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        assert await client.prompt(sid, "where are you?") == {"stopReason": "end_turn"}

    result = next(m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool")
    assert "mcp__github__*" in str(result) and "cwd=" not in str(result), result
