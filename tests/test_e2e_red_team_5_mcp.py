"""A fifth attack round (issue 19's hidden red team): what the editor's stdio MCP servers
get from the agent, and whether what they start dies with it. End to end through the real
server and a real MCP server (`tests/support/mcp_server.py`).

- A server inherited every token the sandbox drops from commands but the model keys
  (`GITHUB_TOKEN`, `NPM_TOKEN`, `STRIPE_SECRET_KEY`…): a server fetched from a registry by
  `npx` read them all, though its docstring said it got what commands get.
- A child the server detached (`setsid`, as a daemon or a browser it drives does) left the
  group the watcher kills, and outlived the agent, kill -9 and a normal end alike.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.mcp_entries import stdio_entry
from tests.support.processes import alive, wait_gone


async def test_a_stdio_server_gets_none_of_the_tokens_commands_lose(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    names = ["GITHUB_TOKEN", "NPM_TOKEN", "STRIPE_SECRET_KEY", "DB_PASSWORD", "GIVEN_TOKEN", "PLAIN_SETTING"]
    calls = [ToolCallSpec("mcp__env__where", {"variable": name}, id=name) for name in names]
    fake.script([Reply(tool_calls=calls), Reply(text="Done.")])
    secrets = {
        "GITHUB_TOKEN": "ghp_mcp0123",
        "NPM_TOKEN": "npm_mcp0123",
        "STRIPE_SECRET_KEY": "sk_live_mcp0123",
    }
    env = server_env(home, fake, DB_PASSWORD="hunter2-mcp", PLAIN_SETTING="kept", **secrets)
    entry = stdio_entry("env", GIVEN_TOKEN="the-editor-gave-it")  # the user's own entry: passed
    async with connected(env, permission="allow_once") as (_, client):
        sid = (await client.request("session/new", {"cwd": str(project), "mcpServers": [entry]}))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        assert await client.prompt(sid, "show me") == {"stopReason": "end_turn"}
    messages = fake.requests[-1].body["messages"]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    for name in ("GITHUB_TOKEN", "NPM_TOKEN", "STRIPE_SECRET_KEY", "DB_PASSWORD"):
        assert f"{name}=<unset>" in results[name], results
    assert "GIVEN_TOKEN=the-editor-gave-it" in results["GIVEN_TOKEN"]
    assert "PLAIN_SETTING=kept" in results["PLAIN_SETTING"]


async def detached_child_outlives(
    home: Path, fake: FakeProvider, project: Path, tmp_path: Path, kill: bool
) -> None:
    pid_file, detached_file = tmp_path / "server.pid", tmp_path / "detached.pid"
    entry = stdio_entry(
        "daemon", HERMES_MCP_PID_FILE=str(pid_file), HERMES_MCP_DETACHED_PID_FILE=str(detached_file)
    )
    pids: list[int] = []
    try:
        async with connected(server_env(home, fake)) as (server, client):
            await client.request("session/new", {"cwd": str(project), "mcpServers": [entry]})
            pids = [int(pid_file.read_text()), int(detached_file.read_text())]
            assert all(alive(pid) for pid in pids)
            assert os.getsid(pids[1]) != os.getsid(pids[0])  # it left the server's session
            if kill:
                server.process.kill()
                await server.process.wait()
        for pid in pids:
            await wait_gone(pid, "the MCP server or the child it detached")
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_a_child_the_server_detached_dies_with_a_kill_9_of_the_agent(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    await detached_child_outlives(home, fake, project, tmp_path, kill=True)


async def test_a_child_the_server_detached_dies_when_the_agent_ends(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    await detached_child_outlives(home, fake, project, tmp_path, kill=False)
