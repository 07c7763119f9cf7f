"""What an MCP server says about itself is not trusted, and what it gets is not more than it
needs, over the real server with the test MCP server over stdio:
- a tool annotated `readOnlyHint` asks like any other until the user says "always" for it
  (that server's tool, nothing else);
- a stdio server does not inherit the model keys (what the editor set for it, it gets);
- a server that ignores SIGTERM, and its child, die with a kill -9 of the agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.mcp_entries import stdio_entry
from tests.support.processes import alive, wait_gone


def call(tool: str, call_id: str, **args: Any) -> list[Reply]:
    return [Reply(tool_calls=[ToolCallSpec(tool, args, id=call_id)]), Reply(text="Done.")]


def tool_results(fake: FakeProvider) -> dict[str, str]:
    messages = fake.requests[-1].body["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


async def session(client: AcpClient, project: Path, mode: str, *servers: dict[str, Any]) -> str:
    params = {"cwd": str(project), "mcpServers": list(servers)}
    sid = (await client.request("session/new", params))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": mode})
    return sid


@pytest.mark.parametrize("mode", ["ask", "accept_edits", "auto", "plan"])
async def test_a_read_only_hint_asks_until_the_user_says_always_for_that_tool(
    fake: FakeProvider, home: Path, project: Path, mode: str
) -> None:
    asked: list[str] = []

    def user(params: dict[str, Any]) -> str:
        asked.append(params["toolCall"]["toolCallId"])
        return "allow_always" if len(asked) == 2 else "reject_once"

    fake.script(
        [
            *call("mcp__one__where", "first"),
            *call("mcp__one__where", "second"),
            *call("mcp__one__where", "third"),
            *call("mcp__two__where", "other_server"),
        ]
    )
    async with connected(server_env(home, fake), permission=user) as (_, client):
        sid = await session(client, project, mode, stdio_entry("one"), stdio_entry("two"))
        for _ in range(4):
            assert await client.prompt(sid, "where are you?") == {"stopReason": "end_turn"}
    # Asked, refused; asked, "always"; then that tool of that server runs unasked; the same
    # tool of another server asks.
    assert asked == ["first", "second", "other_server"]
    results = tool_results(fake)
    assert "rejected" in results["first"].lower()
    assert "cwd=" in results["second"] and "cwd=" in results["third"]
    assert "rejected" in results["other_server"].lower()


async def test_a_stdio_server_does_not_inherit_the_model_keys(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCallSpec("mcp__env__where", {"variable": "OPENAI_API_KEY"}, id="openai"),
                    ToolCallSpec("mcp__env__where", {"variable": "ANTHROPIC_API_KEY"}, id="anthropic"),
                    ToolCallSpec("mcp__env__where", {"variable": "BACKUP_KEY"}, id="fallback"),
                    ToolCallSpec("mcp__env__where", {"variable": "HERMES_MCP_TEST"}, id="given"),
                    ToolCallSpec("mcp__env__where", {"variable": "PLAIN_SETTING"}, id="plain"),
                ]
            ),
            Reply(text="Done."),
        ]
    )
    # A fallback provider whose key lives in BACKUP_KEY: hidden like the main keys.
    env = server_env(home, fake, BACKUP_KEY="sk-backup", PLAIN_SETTING="kept")
    config = home / ".hermes-acp" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[[fallback]]\nprovider = "openai"\nmodel = "gpt-4.1-mini"\napi_key_env = "BACKUP_KEY"\n'
    )
    async with connected(env, permission="allow_once") as (_, client):
        sid = await session(client, project, "yolo", stdio_entry("env", HERMES_MCP_TEST="from-the-editor"))
        assert await client.prompt(sid, "show me") == {"stopReason": "end_turn"}
    results = tool_results(fake)
    assert env["OPENAI_API_KEY"] == "test" and "OPENAI_API_KEY=<unset>" in results["openai"], results
    assert "ANTHROPIC_API_KEY=<unset>" in results["anthropic"]
    assert "BACKUP_KEY=<unset>" in results["fallback"]
    assert "HERMES_MCP_TEST=from-the-editor" in results["given"]
    assert "PLAIN_SETTING=kept" in results["plain"]


async def test_a_stubborn_server_and_its_child_die_with_a_kill_9_of_the_agent(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    pid_file, child_file = tmp_path / "server.pid", tmp_path / "child.pid"
    entry = stdio_entry(
        "stubborn",
        HERMES_MCP_PID_FILE=str(pid_file),
        HERMES_MCP_CHILD_PID_FILE=str(child_file),
        HERMES_MCP_IGNORE_TERM="1",
    )
    async with connected(server_env(home, fake)) as (server, client):
        await session(client, project, "ask", entry)
        pids = [int(pid_file.read_text()), int(child_file.read_text())]
        assert all(alive(pid) for pid in pids)
        server.process.kill()
        await server.process.wait()
        for pid in pids:
            await wait_gone(pid, "the MCP server or its child")
