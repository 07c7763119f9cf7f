"""`hermes-acp --stdio` with every kind of stdin: /dev/null, a regular file (a script),
a pipe written all at once and then closed, a terminal; and SIGTERM / SIGHUP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest

from hermes_acp.cli import TERMINAL_HINT
from tests.support.acp_harness import NO_CAPABILITIES, WireChecker, connected, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.processes import pids_running, unique_seconds, wait_gone


def rpc(request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def serve_file(
    env: dict[str, str], requests: list[dict[str, Any]], path: Path
) -> tuple[int, list[dict], str]:
    """Run `hermes-acp --stdio < path`; every stdout line checked against the schema."""
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    checker = WireChecker()
    for request in requests:
        checker.sent(request)
    with path.open("rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "hermes_acp", "--stdio"],
            stdin=stdin,
            capture_output=True,
            env=env,
            timeout=60,
        )
    messages = [checker.check_line(line) for line in result.stdout.splitlines()]
    assert not checker.violations, checker.violations
    return result.returncode, [m for m in messages if m is not None], result.stderr.decode()


def answer(messages: list[dict[str, Any]], request_id: Any) -> dict[str, Any]:
    return next(m for m in messages if "method" not in m and m.get("id") == request_id)


async def stored_session(home: Path, fake: FakeProvider, project: Path) -> tuple[dict[str, str], str]:
    """A server environment with `home`, and a session with one finished turn in its store."""
    env = server_env(home, fake)
    fake.script([Reply(text="first answer")])
    async with connected(env) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        assert (await client.prompt(sid, "first question"))["stopReason"] == "end_turn"
    return env, sid


@pytest.mark.parametrize(
    "before_exec",
    [None, lambda: os.close(0)],  # `hermes-acp --stdio </dev/null`, `hermes-acp --stdio <&-`
    ids=["dev_null", "closed"],
)
def test_stdin_from_dev_null_or_closed_ends_at_once_quietly(
    tmp_path: Path, before_exec: Callable[[], None] | None
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hermes_acp", "--stdio"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=server_env(tmp_path),
        timeout=60,
        preexec_fn=before_exec,
    )
    assert result.returncode == 0
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr


async def test_a_request_file_is_a_script_every_request_is_answered_in_order(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env, sid = await stored_session(tmp_path, fake, project)
    fake.script([Reply(text="second answer")])
    code, messages, stderr = serve_file(
        env,
        [
            rpc(1, "initialize", {"protocolVersion": 1}),
            rpc(2, "session/resume", {"sessionId": sid, "cwd": str(project), "mcpServers": []}),
            rpc(
                3,
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "second question"}]},
            ),
            rpc(4, "session/list", {"cwd": str(project)}),
        ],
        tmp_path / "requests.jsonl",
    )
    assert code == 0, stderr
    assert "Traceback" not in stderr
    answered = [m["id"] for m in messages if "method" not in m]
    assert answered == [1, 2, 3, 4]
    assert answer(messages, 3)["result"]["stopReason"] == "end_turn"
    chunks = [
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(chunks) == "second answer"
    sent = json.dumps(fake.requests[-1].body["messages"])
    assert "first question" in sent and "second question" in sent  # the resumed history went along


async def test_a_script_prompt_that_needs_permission_is_rejected_not_hung(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env, sid = await stored_session(tmp_path, fake, project)
    marker = project / "ran.txt"
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("terminal", {"command": f"touch {marker}"}, id="t1")]),
            Reply(text="ok"),
        ]
    )
    code, messages, stderr = serve_file(
        env,
        [
            rpc(1, "initialize", {"protocolVersion": 1}),
            rpc(2, "session/resume", {"sessionId": sid, "cwd": str(project), "mcpServers": []}),
            rpc(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "touch it"}]}),
        ],
        tmp_path / "requests.jsonl",
    )
    assert code == 0, stderr
    assert answer(messages, 3)["result"]["stopReason"] == "end_turn"
    statuses = [
        m["params"]["update"].get("status")
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == "t1"
    ]
    assert statuses[-1] == "failed"
    assert not marker.exists()


async def test_requests_piped_at_once_run_the_prompt_to_its_end(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    """`printf '<requests>' | hermes-acp --stdio`: the prompt waits for the resume it
    depends on, and closing stdin lets it finish instead of cancelling it."""
    env, sid = await stored_session(tmp_path, fake, project)
    fake.script([Reply(text="piped " * 20, chunk_size=6, chunk_delay=0.01)])
    async with spawn_server(env) as server:
        await server.send_together(
            rpc(1, "initialize", {"protocolVersion": 1}),
            rpc(2, "session/resume", {"sessionId": sid, "cwd": str(project), "mcpServers": []}),
            rpc(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}),
        )
        await server.close_stdin()
        assert (await server.response_to(3))["result"]["stopReason"] == "end_turn"
        assert "result" in await server.response_to(2)
        assert await server.wait() == 0


@pytest.mark.parametrize("opening", ["session/resume", "session/load"])
async def test_a_client_that_stopped_reading_is_the_end_of_the_connection(
    fake: FakeProvider, tmp_path: Path, project: Path, opening: str
) -> None:
    """The client closed its end of our stdout, then wrote its requests and closed stdin:
    the first failed write ends the connection, and the process exits on its own (it
    used to wait forever for the resume answer it could not write)."""
    env, sid = await stored_session(tmp_path, fake, project)
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads what the server writes
    requests = [
        rpc(1, "initialize", {"protocolVersion": 1}),
        rpc(2, opening, {"sessionId": sid, "cwd": str(project), "mcpServers": []}),
        rpc(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}),
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hermes_acp",
        "--stdio",
        stdin=asyncio.subprocess.PIPE,
        stdout=write_end,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    os.close(write_end)
    before = len(fake.requests)
    lines = "".join(json.dumps(r) + "\n" for r in requests).encode()
    try:
        # Writes, closes stdin and waits for the exit; the cap only catches a hang.
        _, stderr = await asyncio.wait_for(process.communicate(lines), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, stderr.decode()
    assert "output closed" in stderr.decode()  # said why it stopped
    assert len(fake.requests) == before  # no model call for an answer nobody can read


async def test_a_permission_a_prompt_needs_after_stdin_closed_is_rejected(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    """Nobody is left to answer: the request is rejected, the turn goes on to its end."""
    env, sid = await stored_session(tmp_path, fake, project)
    marker = project / "ran.txt"
    call = ToolCallSpec("terminal", {"command": f"touch {marker}"}, id="t1")
    fake.script(
        [Reply(text="let me see " * 5, tool_calls=[call], chunk_size=4, chunk_delay=0.02), Reply(text="done")]
    )
    async with spawn_server(env) as server:
        await server.send_together(
            rpc(1, "initialize", {"protocolVersion": 1}),
            rpc(2, "session/resume", {"sessionId": sid, "cwd": str(project), "mcpServers": []}),
            rpc(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "touch it"}]}),
        )
        while not any(m.get("method") == "session/update" for m in server.received):
            await server.next_message()
        await server.close_stdin()
        assert (await server.response_to(3))["result"]["stopReason"] == "end_turn"
        assert await server.wait() == 0
    statuses = [
        m["params"]["update"].get("status")
        for m in server.received
        if m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == "t1"
    ]
    assert statuses[-1] == "failed"
    assert not marker.exists()


def test_a_terminal_on_stdin_gets_a_one_line_hint_and_is_still_served(tmp_path: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "hermes_acp", "--stdio"],
        env=server_env(tmp_path),
        timeout=30,
        encoding="utf-8",
    )
    try:
        child.expect_exact(TERMINAL_HINT)
        child.sendline(json.dumps(rpc(1, "initialize", {"protocolVersion": 1})))
        child.expect_exact('"protocolVersion":1')
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_shuts_down_like_end_of_input_killing_the_running_command(
    fake: FakeProvider, tmp_path: Path, project: Path, signum: int
) -> None:
    seconds = unique_seconds(300)
    command = f"exec sleep {seconds}"  # a command line of its own, found by its host pid
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("terminal", {"command": command}, id="t1")]), Reply(text="ok")]
    )
    env = server_env(tmp_path, fake)
    async with connected(env, NO_CAPABILITIES) as (server, client):  # commands run under the server
        sid = (await client.new_session(project))["sessionId"]
        prompt = client.start_prompt(sid, "run the long command")
        [command_pid] = await client.wait_for(lambda: pids_running("sleep", seconds))
        os.kill(server.pid, signum)
        assert (await prompt)["stopReason"] == "cancelled"  # answered, not dropped
        assert await server.wait() == 0
        await wait_gone(command_pid, "the command")
    assert "Traceback" not in server.stderr
    db = sqlite3.connect(Path(env["HERMES_ACP_HOME"]) / "sessions.db")
    rows = db.execute("SELECT role, content FROM messages WHERE session_id = ?", (sid,)).fetchall()
    assert rows[0][0] == "user" and "long command" in rows[0][1]
