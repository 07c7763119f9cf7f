"""Errors, malformed input, closed stdin and stdout purity, over raw pipes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
import pytest_asyncio

from tests.support.acp_harness import ServerProcess, connected, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")


SERVER_SETUP = ServerSetup(sdk_client=False)


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def initialized(server: ServerProcess) -> None:
    reply = await server.request("init", "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert reply["result"]["protocolVersion"] == 1


async def still_serving(server: ServerProcess, tag: str) -> None:
    reply = await server.request(f"alive-{tag}", "initialize", {"protocolVersion": 1})
    assert reply["result"]["protocolVersion"] == 1


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"', -32700),
        (b"\xc3\x28\xa0\xa1 not utf-8", -32700),
        (b"12345", -32600),
        (b'"a string"', -32600),
        (b'[{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": 1}}]', -32600),
        (b"[]", -32600),
    ],
)
async def test_malformed_lines_are_answered_and_serving_goes_on(
    raw: ServerProcess, line: bytes, code: int
) -> None:
    await raw.send_line(line)
    reply = await raw.next_message()
    assert reply["id"] is None
    assert reply["error"]["code"] == code
    await still_serving(raw, str(code))


async def test_an_object_that_is_not_a_message_echoes_its_id(raw: ServerProcess) -> None:
    for line, echoed in (
        (b'{"jsonrpc": "2.0", "id": 41}', 41),
        (b'{"jsonrpc": "2.0", "id": "x", "method": 12}', "x"),
        (b'{"id": 42, "method": "initialize"}', 42),
    ):
        await raw.send_line(line)
        reply = await raw.next_message()
        assert reply["id"] == echoed
        assert reply["error"]["code"] == -32600
    await still_serving(raw, "echo")


async def test_unknown_methods_are_32601(raw: ServerProcess) -> None:
    for method in ("session/teleport", "_hermes/unknown", "_zed/something", "fs/read_text_file"):
        reply = await raw.request(f"m-{method}", method, {})
        assert reply["error"]["code"] == -32601, method
        assert method in reply["error"]["message"]


async def test_unknown_notifications_are_ignored(raw: ServerProcess) -> None:
    for method in ("session/teleported", "_hermes/hint", "$/cancel_request"):
        await raw.send({"jsonrpc": "2.0", "method": method, "params": {"x": 1}})
    # a cancel for a session nobody knows is harmless too
    await raw.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}})
    await raw.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"bogus": True}})
    await raw.send(
        {"jsonrpc": "2.0", "id": "after-notes", "method": "initialize", "params": {"protocolVersion": 1}}
    )
    reply = await raw.next_message()  # nothing answered the notifications
    assert reply["id"] == "after-notes"
    assert reply["result"]["protocolVersion"] == 1


@pytest.mark.parametrize(
    ("method", "params", "fields"),
    [
        ("session/new", {"cwd": 5, "mcpServers": []}, ["cwd"]),
        ("session/new", {"mcpServers": []}, ["cwd"]),
        ("session/new", {"cwd": "/tmp"}, ["mcpServers"]),
        ("session/prompt", {"prompt": [{"type": "text", "text": "hi"}]}, ["sessionId"]),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "text"}]}, ["prompt[0].text.text"]),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "video", "uri": "x"}]}, ["prompt[0]"]),
        ("session/set_mode", {"sessionId": "s"}, ["modeId"]),
        ("authenticate", {}, ["methodId"]),
        ("session/new", ["/tmp", []], ["params"]),
    ],
)
async def test_invalid_params_name_the_field(
    raw: ServerProcess, method: str, params: object, fields: list[str]
) -> None:
    reply = await raw.request(f"p-{method}-{json.dumps(params)}", method, params)
    error = reply["error"]
    assert error["code"] == -32602
    assert error["data"].get("fields", [error["data"].get("field")]) == fields
    for field in fields:
        assert field in error["message"]
    json.dumps(error["data"])  # plain JSON, no pydantic objects


async def test_stdin_closed_mid_turn_lets_the_turn_finish_stores_it_and_exits_0(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """End of input is a script done writing, not a user gone: the turn runs to its end."""
    project = tmp_path / "project"
    project.mkdir()
    story = "a long answer " * 10
    fake.script([Reply(text=story, chunk_size=5, chunk_delay=0.02)])
    env = server_env(tmp_path, fake)
    async with connected(env) as (process, client):
        sid = (await client.new_session(project))["sessionId"]
        prompt = client.start_prompt(sid, "tell me a long story")
        await client.wait_for(lambda: client.session_updates(sid, "agent_message_chunk"))
        await process.close_stdin()
        assert (await prompt)["stopReason"] == "end_turn"
        assert client.text(sid) == story
        assert await process.wait(within=30) == 0
    db = sqlite3.connect(Path(env["HERMES_ACP_HOME"]) / "sessions.db")
    rows = db.execute("SELECT role, content FROM messages WHERE session_id = ?", (sid,)).fetchall()
    assert rows[0][0] == "user" and "long story" in rows[0][1]
    assert rows[-1][0] == "assistant" and story.strip() in rows[-1][1]


async def test_requests_in_flight_when_stdin_closes_are_still_answered(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """A script may write its requests and close stdin at once (`printf ... | hermes-acp`):
    every request gets its answer before the process exits."""
    project = tmp_path / "project"
    project.mkdir()
    initialize = {"protocolVersion": 1}
    new = {"cwd": str(project), "mcpServers": []}
    async with spawn_server(server_env(tmp_path, fake)) as process:
        await process.send_together(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new},
            {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": new},
        )
        await process.close_stdin()
        assert (await process.response_to(1))["result"]["protocolVersion"] == 1
        assert "sessionId" in (await process.response_to(2))["result"]
        assert "sessionId" in (await process.response_to(3))["result"]
        assert await process.wait(within=30) == 0


async def test_a_prompt_still_running_past_end_of_input_seconds_answers_cancelled(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """The wait for a turn at end of input is bounded by the `end_of_input_seconds` setting."""
    project = tmp_path / "project"
    project.mkdir()
    fake.script([Reply(text="slow " * 100, chunk_size=5, chunk_delay=0.05)])  # 5 s of answer
    env = server_env(tmp_path, fake, HERMES_ACP_END_OF_INPUT_SECONDS="0.3")
    async with connected(env) as (process, client):
        sid = (await client.new_session(project))["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        await process.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": prompt})
        await client.wait_for(lambda: client.session_updates(sid, "agent_message_chunk"))
        await process.close_stdin()
        assert (await process.response_to("p"))["result"] == {"stopReason": "cancelled"}
        assert await process.wait(within=30) == 0


async def test_stray_prints_land_on_stderr(fake: FakeProvider, tmp_path: Path) -> None:
    """Whatever a library prints (print() or a raw write to fd 1) must not reach the
    protocol stream: every stdout line is checked to be JSON-RPC by the harness."""
    hooks, go = tmp_path / "hooks", tmp_path / "go"
    hooks.mkdir()
    # The library prints once the server is serving (the test says when by creating `go`):
    # the redirection of fd 1 happens at start-up, before the initialize answer.
    (hooks / "sitecustomize.py").write_text(
        "import os, sys, threading, time\n"
        "def stray():\n"
        f"    while not os.path.exists({str(go)!r}):\n"
        "        time.sleep(0.01)\n"
        "    print('stray print from a library')\n"
        "    os.write(1, b'stray raw write to fd 1\\n')\n"
        "    sys.stdout.flush()\n"
        "threading.Thread(target=stray, daemon=True).start()\n"
    )
    env = server_env(tmp_path, fake, PYTHONPATH=str(hooks))
    async with spawn_server(env) as process:
        await process.request("i", "initialize", {"protocolVersion": 1})
        go.touch()
        # Wait for the strays themselves (the timer fires whenever a loaded machine lets it).
        while not ("stray print from a library" in process.stderr and "stray raw write" in process.stderr):
            await asyncio.sleep(0.02)
        await process.request("i2", "initialize", {"protocolVersion": 1})  # stdout still speaks JSON-RPC
        await process.close_stdin()
        assert await process.wait() == 0
