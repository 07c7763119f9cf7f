"""Issue 19, finding 7: a FIFO planted as an ignore file holds ripgrep forever (it opens
every ignore file it meets, and opening a FIFO waits for a writer). A sandboxed command
plants one; list_files, search and the checkpoint after the turn then each answer or go
on within seconds instead of waiting without end, end to end through the real server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.waiting import HANG

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_fifo_planted_as_an_ignore_file_blocks_no_file_operation(
    fake: FakeProvider, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "notes.txt").write_text("NEEDLE here\n")
    calls = [
        ToolCallSpec("terminal", {"command": "mkfifo sub/.gitignore"}, id="plant"),
        ToolCallSpec("list_files", {"path": "."}, id="list"),
        ToolCallSpec("search", {"pattern": "NEEDLE", "path": "."}, id="search"),
        ToolCallSpec("write_file", {"path": "written.txt", "content": "kept\n"}, id="write"),
    ]
    fake.forget()
    fake.route("plant", [Reply(tool_calls=calls), Reply(text="done")])
    async with connected(server_env(tmp_path / "home", fake), NO_CAPABILITIES) as (server, client):
        session = await client.session_in_mode(project, "auto")
        # Before the fix the listing waited until the user cancelled (and the checkpoint
        # for its 60 s timeout): the turn did not end within HANG.
        assert await client.prompt(session, "plant", within=HANG) == {"stopReason": "end_turn"}
        await client.wait_for(lambda: "checkpoint after a turn failed" in server.stderr)
        assert "FIFO (sub/.gitignore)" in server.stderr
    assert (project / "written.txt").read_text() == "kept\n"  # the turn went on past the snapshot
    told = {
        m["tool_call_id"]: m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"
    }
    assert "FIFO (sub/.gitignore)" in told["list"], told
    assert "FIFO (sub/.gitignore)" in told["search"], told
