"""The command sandbox over the real server: confinement through the local and the editor
terminal paths, network off, mode auto, unconfined re-runs, an unavailable sandbox, and
commands dying with a kill -9 of the agent."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.homes import plant, user_home
from tests.support.processes import pids_running, unique_seconds, wait_gone

LOCAL = PLAIN_CAPABILITIES | {"terminal": False}
EDITOR = PLAIN_CAPABILITIES  # the harness client runs terminal/create as real processes
PATHS = {"local": LOCAL, "editor": EDITOR}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fake HOME with a private key, and a `.env` above the workspace."""
    plant(tmp_path, {".env": "API_TOKEN=secret-from-parent\n"})
    return user_home(tmp_path, {".ssh/id_rsa": "PRIVATE-KEY-MATERIAL\n"})


@asynccontextmanager
async def connected(
    home: Path, fake: FakeProvider, capabilities: dict[str, Any], permission: Any = "allow_once", **env: str
) -> AsyncIterator[AcpClient]:
    async with spawn_server(server_env(home, fake, **env)) as server:
        client = server.sdk_client(capabilities, permission=permission)
        await client.initialize()
        yield client


def tool_turn(*calls: ToolCallSpec) -> list[Reply]:
    return [Reply(tool_calls=list(calls)), Reply(text="Done.")]


def tool_results(fake: FakeProvider) -> list[str]:
    messages = fake.requests[-1].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def final_update(client: AcpClient, call_id: str) -> dict[str, Any]:
    return [u for u in client.tool_updates(call_id) if u.get("status") in ("completed", "failed")][-1]


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_a_sandboxed_command_does_not_see_the_model_credentials(
    fake: FakeProvider, home: Path, project: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's own key (OPENAI_API_KEY=test, from server_env) for the local path; for
    # the editor path, the editor's environment (this test process, whose terminal runs it).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-editors-environment")
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": "env"}, id="call_env")))
    async with connected(home, fake, PATHS[where]) as client:
        sid = await client.session_in_mode(project, "yolo")
        assert await client.prompt(sid, "show the environment") == {"stopReason": "end_turn"}
    [listing] = tool_results(fake)
    assert "TMPDIR=" in listing  # the command ran, sandboxed
    assert "OPENAI_API_KEY" not in listing, listing


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_a_sandboxed_command_cannot_write_outside_or_read_secrets(
    fake: FakeProvider, tmp_path: Path, home: Path, project: Path, where: str
) -> None:
    outside = tmp_path / "outside.txt"
    key = home / ".ssh" / "id_rsa"
    write_outside = f"echo pwned > {outside}"
    read_secrets = f"cat {key}; cat {tmp_path / '.env'}"
    write_inside = "echo fine > inside.txt && cat inside.txt"
    fake.script(
        tool_turn(
            ToolCallSpec("terminal", {"command": write_outside}, id="call_out"),
            ToolCallSpec("terminal", {"command": read_secrets}, id="call_key"),
            ToolCallSpec("terminal", {"command": write_inside}, id="call_in"),
        )
    )
    async with connected(home, fake, PATHS[where]) as client:
        sid = await client.session_in_mode(project, "yolo")
        assert await client.prompt(sid, "try") == {"stopReason": "end_turn"}
        assert client.permission_requests == []  # yolo: nothing asks, the sandbox holds
        out, secrets, inside = tool_results(fake)
        if where == "editor":
            assert [m for m, _ in client.calls].count("terminal/create") == 3
            created = [p for m, p in client.calls if m == "terminal/create"]
            # The editor's title and first line read as the command, not as bwrap's launch.
            assert [p["args"] for p in created] == [[write_outside], [read_secrets], [write_inside]]
            assert all(Path(p["command"]).name == "sandboxed" for p in created)
            assert not any("bwrap" in " ".join([p["command"], *p["args"]]) for p in created)
        assert not outside.exists()
        assert "Read-only file system" in out and "[sandbox]" in out
        assert "PRIVATE-KEY-MATERIAL" not in secrets and "secret-from-parent" not in secrets
        assert "[sandbox]" in secrets
        assert (project / "inside.txt").read_text() == "fine\n" and "fine" in inside
        card = final_update(client, "call_out")
        assert card["status"] == "failed"
        assert card["rawOutput"]["sandboxed"] is True and "outside" in card["rawOutput"]["sandbox_refused"]
        shown = " ".join(c.get("content", {}).get("text", "") for c in card.get("content", []))
        if where == "local":
            assert "sandbox likely refused" in shown


@pytest.fixture
def host_server() -> Iterator[int]:
    """A TCP server on the host's loopback that answers every connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@pytest.mark.parametrize("network", ["on", "off"])
async def test_network_off_cuts_even_the_hosts_loopback(
    fake: FakeProvider, home: Path, project: Path, host_server: int, network: str
) -> None:
    probe = (
        f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {host_server}), 5); "
        "print('connected')\""
    )
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": probe}, id="call_net")))
    async with connected(home, fake, LOCAL, HERMES_ACP_SANDBOX_NETWORK=network) as client:
        sid = await client.session_in_mode(project, "yolo")
        assert await client.prompt(sid, "connect") == {"stopReason": "end_turn"}
    [result] = tool_results(fake)
    if network == "on":
        assert result.startswith("Exit code: 0") and "connected" in result
    else:
        assert "Connection refused" in result
        assert "[sandbox]" in result and "network, which is off" in result


async def test_auto_runs_sandboxed_commands_and_asks_to_leave_the_sandbox(
    fake: FakeProvider, tmp_path: Path, home: Path, project: Path
) -> None:
    outside = tmp_path / "outside.txt"
    command = f"echo out > {outside}"
    fake.script(
        tool_turn(ToolCallSpec("terminal", {"command": "echo harmless"}, id="call_ok"))
        + tool_turn(ToolCallSpec("terminal", {"command": command}, id="call_blocked"))
        + tool_turn(ToolCallSpec("terminal", {"command": command, "unconfined": True}, id="call_escape"))
        + tool_turn(ToolCallSpec("terminal", {"command": "echo again > x", "unconfined": True}, id="call_x"))
    )
    async with connected(home, fake, LOCAL, permission="allow_once") as client:
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "harmless") == {"stopReason": "end_turn"}
        assert client.permission_requests == []
        assert "harmless" in tool_results(fake)[-1]

        assert await client.prompt(sid, "write outside") == {"stopReason": "end_turn"}
        assert client.permission_requests == []  # ran sandboxed, and was refused
        assert not outside.exists() and "unconfined=true" in tool_results(fake)[-1]

        assert await client.prompt(sid, "again, unconfined") == {"stopReason": "end_turn"}
        [asked] = client.permission_requests
        assert asked["toolCall"]["title"].endswith("(runs outside the sandbox)")
        hermes = asked["_meta"]["hermes"]
        assert hermes["sandboxed"] is False and "outside the sandbox" in hermes["reason"]
        assert outside.read_text() == "out\n"  # approved once: it ran unconfined

        client.permission = "reject_once"
        assert await client.prompt(sid, "another unconfined") == {"stopReason": "end_turn"}
        assert len(client.permission_requests) == 2  # "once" covered only that call
        assert not (project / "x").exists()


async def test_always_allowing_an_unconfined_command_covers_only_that_command(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    fake.script(
        tool_turn(ToolCallSpec("terminal", {"command": "touch a", "unconfined": True}, id="c1"))
        + tool_turn(ToolCallSpec("terminal", {"command": "touch b", "unconfined": True}, id="c2"))
        + tool_turn(ToolCallSpec("terminal", {"command": "ls -a", "unconfined": True}, id="c3"))
    )
    async with connected(home, fake, LOCAL, permission="allow_always") as client:
        sid = await client.session_in_mode(project, "yolo")
        for text in ("one", "two", "three"):
            assert await client.prompt(sid, text) == {"stopReason": "end_turn"}
        # touch a asked, touch b did not (same scope, always), ls asked (another command)
        titles = [p["toolCall"]["title"] for p in client.permission_requests]
        assert len(titles) == 2 and "touch a" in titles[0] and "ls -a" in titles[1]
        assert (project / "a").exists() and (project / "b").exists()


async def test_an_unavailable_sandbox_is_said_and_every_command_asks_even_in_yolo(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    fake.script(
        tool_turn(ToolCallSpec("terminal", {"command": "echo ran > ran.txt"}, id="call_1"))
        + tool_turn(ToolCallSpec("terminal", {"command": "echo again"}, id="call_2"))
    )
    bogus = str(project.parent / "no-such-bwrap")
    async with connected(home, fake, LOCAL, HERMES_ACP_SANDBOX_BWRAP=bogus) as client:
        sid = await client.session_in_mode(project, "yolo")
        assert await client.prompt(sid, "run it") == {"stopReason": "end_turn"}
        thoughts = client.text(sid, "agent_thought_chunk")
        assert "sandbox cannot start" in thoughts and "ask for approval" in thoughts
        [asked] = client.permission_requests
        assert asked["_meta"]["hermes"]["sandboxed"] is False
        assert "the sandbox cannot start" in asked["_meta"]["hermes"]["reason"]
        assert (project / "ran.txt").read_text() == "ran\n"  # approved: ran unconfined

        client.permission = "reject_once"
        assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
        assert len(client.permission_requests) == 2
        assert client.text(sid, "agent_thought_chunk").count("sandbox cannot start") == 1  # said once


def test_check_says_when_the_sandbox_cannot_start(fake: FakeProvider, home: Path) -> None:
    fake.script([Reply(text="OK"), Reply(text="OK")])
    env = server_env(home, fake)
    working = subprocess.run(
        [sys.executable, "-m", "hermes_acp", "--check"], capture_output=True, text=True, env=env, timeout=60
    )
    assert "[ok  ] sandbox: workspace-write" in working.stdout, working.stdout
    broken = subprocess.run(
        [sys.executable, "-m", "hermes_acp", "--check"],
        capture_output=True,
        text=True,
        env={**env, "HERMES_ACP_SANDBOX_BWRAP": "/nonexistent/bwrap"},
        timeout=60,
    )
    assert "[FAIL] sandbox: cannot start: bwrap not found" in broken.stdout, broken.stdout
    assert "Every command will ask" in broken.stdout


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
async def test_kill_9_of_the_agent_kills_its_commands_and_their_children(
    fake: FakeProvider, home: Path, project: Path, sandbox: str
) -> None:
    # A grandchild the shell disowned `( … &)`, and the shell's own foreground child.
    marks = (unique_seconds(1000), unique_seconds(1000))
    command = f"(sleep {marks[0]} &); sleep {marks[1]}"
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": command}, id="call_tree")))
    async with spawn_server(server_env(home, fake, HERMES_ACP_SANDBOX=sandbox), check_exit=False) as server:
        client = server.sdk_client(LOCAL)
        await client.initialize()
        sid = await client.session_in_mode(project, "yolo")
        prompt = client.start_prompt(sid, "run the tree")
        [grandchild] = await client.wait_for(lambda: pids_running("sleep", marks[0]))
        [child] = await client.wait_for(lambda: pids_running("sleep", marks[1]))
        server.process.kill()
        await server.process.wait()
        await wait_gone(grandchild, "the disowned grandchild")
        await wait_gone(child, "the command")
        prompt.cancel()


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_the_sandboxs_folders_in_the_temp_dir_are_removed_when_the_agent_exits(
    fake: FakeProvider, tmp_path: Path, home: Path, project: Path, where: str
) -> None:
    # The agent ends with os._exit (no interpreter teardown): its exit handlers must still
    # run, or every process leaves its mount point and launcher folder behind in /tmp.
    temp = tmp_path / "tmp"
    temp.mkdir()
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": "true"}, id="call_true")))
    async with connected(home, fake, PATHS[where], TMPDIR=str(temp)) as client:
        sid = await client.session_in_mode(project, "yolo")
        assert await client.prompt(sid, "run true") == {"stopReason": "end_turn"}
        assert final_update(client, "call_true")["status"] == "completed"
        assert [p for p in temp.iterdir() if p.name.startswith("hermes-acp-")]  # made while it ran
    assert [p.name for p in temp.iterdir() if p.name.startswith("hermes-acp-")] == []
