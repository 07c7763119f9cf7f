"""Sessions survive the worst: several server processes on one store, and kill -9 mid-tool."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, connected, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.processes import pids_running, unique_seconds, wait_gone
from tests.support.waiting import until

SESSIONS_PER_SERVER = 4
PROMPTS_PER_SESSION = 5


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


async def _converse(client: AcpClient, project: Path, server: int) -> list[str]:
    async def one_session(index: int) -> str:
        sid = (await client.new_session(project))["sessionId"]
        for turn in range(PROMPTS_PER_SESSION):
            answer = await client.prompt(sid, f"server {server} session {index} prompt {turn}")
            assert answer == {"stopReason": "end_turn"}
        return sid

    return list(await asyncio.gather(*(one_session(i) for i in range(SESSIONS_PER_SERVER))))


def stored_tool_call(db: Path, call_id: str) -> bool:
    """Is an assistant message calling `call_id` in the store (read as another process would)?"""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT tool_calls FROM messages WHERE tool_calls IS NOT NULL").fetchall()
    except sqlite3.Error:
        return False  # not created yet, or busy: asked again
    return any(call_id in row[0] for row in rows)


async def test_two_server_processes_on_one_store_lose_nothing(
    fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    env = server_env(tmp_path / "home", fake)
    total = 2 * SESSIONS_PER_SERVER * PROMPTS_PER_SESSION
    fake.script([Reply(text="noted") for _ in range(total)])
    async with connected(env) as (_, first), connected(env) as (_, second):
        ids = await asyncio.gather(_converse(first, project, 1), _converse(second, project, 2))
    assert len(fake.requests) == total
    async with connected(env) as (_, reader):
        listed: list[str] = []
        cursor = None
        while True:
            params = {"cwd": str(project)} | ({"cursor": cursor} if cursor else {})
            page = await reader.request("session/list", params)
            listed += [s["sessionId"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert sorted(listed) == sorted(ids[0] + ids[1])
        for server, session_ids in ((1, ids[0]), (2, ids[1])):
            for index, sid in enumerate(session_ids):
                params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
                await reader.request("session/load", params)
                said = reader.text(sid, "user_message_chunk")
                for turn in range(PROMPTS_PER_SESSION):
                    assert f"server {server} session {index} prompt {turn}" in said
                assert reader.text(sid).count("noted") == PROMPTS_PER_SESSION


async def test_a_server_killed_while_a_tool_runs_can_be_loaded_and_continued(
    fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    env = server_env(tmp_path / "home", fake, HERMES_ACP_DEFAULT_MODE="yolo")
    started = project / "started"
    seconds = unique_seconds(30)  # a duration of its own finds its host pid
    command = f"echo started > {started}; sleep {seconds}"
    fake.script([Reply(tool_calls=[ToolCallSpec("terminal", {"command": command}, id="call_run")])])
    try:
        async with spawn_server(env, check_exit=False) as process:
            client = process.sdk_client()
            await client.initialize()
            sid = (await client.new_session(project))["sessionId"]
            client.start_prompt(sid, "run the long command")
            [pid] = await client.wait_for(lambda: started.exists() and pids_running("sleep", seconds))
            # The history is written behind the turn: kill once the call is on disk, or a
            # slow write (a loaded machine) would be what the kill loses.
            await until(lambda: stored_tool_call(Path(env["HERMES_ACP_HOME"]) / "sessions.db", "call_run"))
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
            await client.aclose()
        await wait_gone(pid, "the command, with the server that ran it")
        async with connected(env) as (_, client):
            await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
            assert "run the long command" in client.text(sid, "user_message_chunk")
            cards = [u for u in client.session_updates(sid) if u.get("toolCallId")]
            assert cards[0]["sessionUpdate"] == "tool_call" and "sleep 30" in cards[0]["title"]
            assert cards[-1]["status"] == "failed"  # it never finished; the card must not spin
            fake.script([Reply(text="The command was interrupted; shall I run it again?")])
            assert await client.prompt(sid, "what happened?") == {"stopReason": "end_turn"}
            sent = str(fake.requests[-1].body["messages"])
            assert "Interrupted" in sent and "what happened?" in sent
    finally:
        # Only host pids: a sandboxed command's `$$` is its pid in the sandbox's namespace,
        # often 1, and killpg(1) is kill(-1): every process the tests may signal.
        for pid in pids_running("sleep", seconds):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
