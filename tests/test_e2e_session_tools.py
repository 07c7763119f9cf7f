"""What a session offers besides the built-in tools, end to end: the editor's MCP servers,
files the user changed between turns, and the search over earlier sessions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.acp_harness import AcpClient, ServerProcess, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.processes import alive, wait_gone
from tests.support.watching import until_watched, watcher_caught_up

pytestmark = pytest.mark.asyncio(loop_scope="module")

MCP_SERVER = str(Path(__file__).parent / "support" / "mcp_server.py")


def stdio_entry(name: str, pid_file: Path) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [MCP_SERVER],
        "env": [{"name": "HERMES_MCP_PID_FILE", "value": str(pid_file)}],
    }


def closed_port_entry(name: str) -> dict[str, Any]:
    with socket.socket() as sock:  # a loopback port nobody listens on once this closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return {"type": "http", "name": name, "url": f"http://127.0.0.1:{port}/mcp", "headers": []}


def inotify_instances(pid: int) -> int:
    """The process's inotify instances: one per workspace watcher that runs."""
    fds = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd) == "anon_inode:inotify"
    return count


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def last_user_text(body: dict[str, Any]) -> str:
    content = next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


# -- MCP servers ---------------------------------------------------------------------------------


async def test_mcp_tools_ask_permission_reach_the_model_and_the_server_ends_with_the_session(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "mcp.pid"
    servers = [stdio_entry("test", pid_file), closed_port_entry("down")]
    sid = (await client.request("session/new", {"cwd": str(project), "mcpServers": servers}))["sessionId"]
    pid = int(pid_file.read_text())
    assert alive(pid)

    # The server that cannot be reached is reported once, and the session works without it.
    note = await client.wait_for(lambda: "MCP servers" in client.text(sid) and client.text(sid))
    assert "MCP server 'down'" in note
    assert "'test'" not in note

    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("mcp__test__add", {"a": 2, "b": 40}, id="call_add")]),
            Reply(text="It is 42."),
        ]
    )
    before = len(fake.requests)
    assert (await client.prompt(sid, "add 2 and 40"))["stopReason"] == "end_turn"

    first, second = fake.requests[before:]
    offered = tool_names(first.body)
    assert "mcp__test__add" in offered
    assert not any(name.startswith("mcp__down__") for name in offered)
    assert tool_names(second.body) == offered  # the tool list stays the same for the session
    [asked] = [p for p in client.permission_requests if p["sessionId"] == sid]
    assert asked["toolCall"]["toolCallId"] == "call_add"
    assert asked["toolCall"]["title"] == 'test: add {"a": 2, "b": 40}'
    assert tool_results(second.body)["call_add"] == "42"
    assert client.tool_updates("call_add")[-1]["status"] == "completed"
    assert client.text(sid).count("MCP server 'down'") == 1

    await client.request("session/close", {"sessionId": sid})
    await wait_gone(pid, "the MCP server")


async def test_resuming_a_live_session_restarts_its_mcp_servers(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    first_pid, second_pid = tmp_path / "first.pid", tmp_path / "second.pid"
    sid = (
        await client.request(
            "session/new", {"cwd": str(project), "mcpServers": [stdio_entry("test", first_pid)]}
        )
    )["sessionId"]
    fake.script([Reply(text="hello")])
    await client.prompt(sid, "hi")  # stored now, so it can be resumed
    old = int(first_pid.read_text())

    await client.request(
        "session/resume",
        {"sessionId": sid, "cwd": str(project), "mcpServers": [stdio_entry("test", second_pid)]},
    )
    await wait_gone(old, "the MCP server")
    new = int(second_pid.read_text())
    assert alive(new)
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("mcp__test__add", {"a": 1, "b": 2}, id="call_again")]),
            Reply(text="3"),
        ]
    )
    await client.prompt(sid, "add")
    assert tool_results(fake.requests[-1].body)["call_again"] == "3"

    await client.request("session/delete", {"sessionId": sid})
    await wait_gone(new)


async def test_mcp_servers_stop_when_the_editor_goes_away(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    pid_file = project.parent / "mcp.pid"
    async with connected(server_env(home, fake)) as (server, client):
        await client.request(
            "session/new", {"cwd": str(project), "mcpServers": [stdio_entry("test", pid_file)]}
        )
        pid = int(pid_file.read_text())
        assert alive(pid)
        assert await server.stop() == 0
    await wait_gone(pid, "the MCP server")


# -- files the user changed between turns ------------------------------------------------------


async def a_session_after_a_turn(client: AcpClient, fake: FakeProvider, project: Path) -> str:
    """A session that has had a turn ("hello"), with the model's answer to the next one scripted."""
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="Hello."), Reply(text="I see.")])
    await client.prompt(sid, "hello")
    return sid


async def test_a_file_the_user_saved_between_turns_is_named_in_the_next_message(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = await a_session_after_a_turn(client, fake, project)
    await asyncio.sleep(1.2)  # past the watcher's grace window after a turn: what follows is the user's
    (project / "notes.txt").write_text("the user's own notes\n")
    await watcher_caught_up(server.pid, project)
    await client.prompt(sid, "look again")
    assert "notes.txt" in last_user_text(fake.requests[-1].body)
    assert "notes.txt" not in last_user_text(fake.requests[-2].body)

    # The editor's transcript shows what the user typed, not the context added for the model.
    start = len(client.session_updates(sid, "user_message_chunk"))
    await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
    replayed = [u["content"]["text"] for u in client.session_updates(sid, "user_message_chunk")[start:]]
    assert replayed == ["hello", "look again"]


async def test_a_file_saved_between_resume_and_the_next_prompt_is_named(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = await a_session_after_a_turn(client, fake, project)
    await client.request("session/resume", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
    await until_watched(server.pid, project)  # the restored session's watcher starts after the response
    (project / "todo.txt").write_text("edited after the resume\n")
    await watcher_caught_up(server.pid, project)
    await client.prompt(sid, "look again")
    assert "todo.txt" in last_user_text(fake.requests[-1].body)


# -- earlier sessions ------------------------------------------------------------------------------


async def test_a_second_session_finds_the_first_ones_conversation(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    first = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="Noted: the parser is called zanzibar.")])
    await client.prompt(first, "let us call the new parser zanzibar")

    second = (await client.new_session(project))["sessionId"]
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("session_search", {"query": "zanzibar"}, id="call_search")]),
            Reply(text="We called it zanzibar."),
        ]
    )
    await client.prompt(second, "what did we call the parser?")
    found = tool_results(fake.requests[-1].body)["call_search"]
    assert first in found
    assert "zanzibar" in found
    assert not [p for p in client.permission_requests if p["sessionId"] == second]  # read-only: no asking
    assert json.dumps(tool_names(fake.requests[-1].body)).count("session_search") == 1


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
async def test_two_loads_of_one_session_in_flight_open_it_once(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path, method: str
) -> None:
    """Chosen behaviour: the second waits for the first, then does what a load of an open
    session does (closes it, opens it again with its own MCP servers; a load replays the
    whole history). One session, one set of MCP servers, whatever the timing."""
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="hello")])
    await client.prompt(sid, "hi")
    await client.request("session/close", {"sessionId": sid})
    pid_files = [tmp_path / "first.pid", tmp_path / "second.pid"]
    client.updates.clear()
    watchers_before = inotify_instances(server.pid)

    await asyncio.gather(
        *(
            client.request(
                method, {"sessionId": sid, "cwd": str(project), "mcpServers": [stdio_entry("test", f)]}
            )
            for f in pid_files
        )
    )

    pids = [int(f.read_text()) for f in pid_files]
    await client.wait_for(lambda: sum(alive(pid) for pid in pids) == 1)
    if method == "session/load":
        assert client.text(sid, "user_message_chunk") == "hi" * 2  # each load replayed it all
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("mcp__test__add", {"a": 1, "b": 2}, id=f"call_{method[-4:]}")]),
            Reply(text="3"),
        ]
    )
    await client.prompt(sid, "add")  # its turn has the session's watcher running
    assert tool_results(fake.requests[-1].body)[f"call_{method[-4:]}"] == "3"
    assert inotify_instances(server.pid) <= watchers_before + 1  # one workspace watcher, not two
    await client.request("session/close", {"sessionId": sid})
    for pid in pids:
        await wait_gone(pid, "the MCP server")


async def test_a_delete_sent_with_a_load_leaves_nothing_running(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="hello")])
    await client.prompt(sid, "hi")
    await client.request("session/close", {"sessionId": sid})
    pid_file = tmp_path / "loaded.pid"

    await asyncio.gather(
        client.request(
            "session/load",
            {"sessionId": sid, "cwd": str(project), "mcpServers": [stdio_entry("test", pid_file)]},
        ),
        client.request("session/delete", {"sessionId": sid}),
    )

    await wait_gone(int(pid_file.read_text()), "the MCP server")
    with pytest.raises(RequestError) as caught:
        await client.prompt(sid, "still there?")
    assert caught.value.code == -32002
