"""Round six of issue 19's hidden red team: limits (a workspace that makes the server do
unbounded work), end to end through the real server with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import git
from tests.support.waiting import HANG

pytestmark = pytest.mark.asyncio(loop_scope="module")

# A cloned repository's `.gitignore` line: as a backtracking regex it took hours against a
# 40-letter name of `a`s, holding the GIL, so every session, the event loop and the exit froze.
BACKTRACKING = "a*" * 14 + "b"


async def test_a_backtracking_gitignore_pattern_stalls_no_session(fake: FakeProvider, tmp_path: Path) -> None:
    hostile = tmp_path / "cloned"
    (hostile / ("a" * 40)).mkdir(parents=True)
    git("init", "-q", cwd=hostile)
    (hostile / ".gitignore").write_text(f"{BACKTRACKING}\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    fake.forget()
    fake.route("hello", [Reply(text="hi there")])
    async with connected(server_env(tmp_path / "home", fake), NO_CAPABILITIES) as (server, client):
        first = (await client.new_session(hostile))["sessionId"]
        assert await client.prompt(first, "hello", within=HANG) == {"stopReason": "end_turn"}
        second = (await client.new_session(plain))["sessionId"]
        assert await client.prompt(second, "hello", within=HANG) == {"stopReason": "end_turn"}
        await server.close_stdin()
        assert await server.wait(HANG) == 0


async def test_a_backtracking_permission_rule_in_a_project_stalls_nothing(
    fake: FakeProvider, tmp_path: Path
) -> None:
    # A project's deny and ask rules apply at once, untrusted (they only tighten); as
    # backtracking regexes, `Read(a*a*…b)` against a long file name and `Bash(x*x*…y)`
    # against the model's command froze the server in the turn's first tool call.
    project = tmp_path / "cloned"
    (project / ".claude").mkdir(parents=True)
    rules = {"permissions": {"deny": [f"Read({BACKTRACKING})", f"Bash({'x*' * 14}y)"]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(rules))
    name = "a" * 40 + ".txt"
    (project / name).write_text("plain text\n")
    calls = [
        ToolCallSpec("read_file", {"path": name}, id="read"),
        ToolCallSpec("terminal", {"command": f"echo {'x' * 40}"}, id="echo"),
    ]
    fake.forget()
    fake.route("look", [Reply(tool_calls=calls), Reply(text="done")])
    async with connected(server_env(tmp_path / "home", fake), NO_CAPABILITIES) as (server, client):
        session = await client.session_in_mode(project, "yolo")
        assert await client.prompt(session, "look", within=HANG) == {"stopReason": "end_turn"}
        await server.close_stdin()
        assert await server.wait(HANG) == 0
    told = {
        m["tool_call_id"]: m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"
    }
    assert "plain text" in told["read"], told
    assert "x" * 40 in told["echo"], told


async def test_search_skips_a_file_whose_one_line_would_fill_memory(
    fake: FakeProvider, tmp_path: Path
) -> None:
    # rg holds a whole line in memory: a 300 MB one-line file took 430 MB, so a workspace's
    # 8 GB one (one sandboxed `yes | tr -d '\n'`, or a cloned data file) searched unasked in
    # any mode took the machine's memory. Files past the cap (64 MiB: one just past it here)
    # are not searched, in a directory or named alone.
    project = tmp_path / "project"
    project.mkdir()
    with (project / "big.log").open("wb") as big:
        big.write(b"x" * (64 * 1024 * 1024) + b"\nNEEDLE in the big file\n")
    (project / "small.txt").write_text("NEEDLE in the small file\n")
    calls = [
        ToolCallSpec("search", {"pattern": "NEEDLE", "path": "."}, id="folder"),
        ToolCallSpec("search", {"pattern": "NEEDLE", "path": "big.log"}, id="alone"),
    ]
    fake.forget()
    fake.route("find", [Reply(tool_calls=calls), Reply(text="done")])
    async with connected(server_env(tmp_path / "home", fake), NO_CAPABILITIES) as (_, client):
        session = (await client.new_session(project))["sessionId"]
        assert await client.prompt(session, "find", within=HANG) == {"stopReason": "end_turn"}
    told = {
        m["tool_call_id"]: m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"
    }
    assert "in the small file" in told["folder"] and "big file" not in told["folder"], told
    assert "search reads files up to 64.0 MB" in told["alone"], told
