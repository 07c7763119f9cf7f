"""The first `initialize`, answered before the server exists (hermes_acp/startup/early_hello.py),
end to end: the same bytes the server writes, whatever arrives with it or around it.

The early path logs `EARLY` (debug); the server's own answer does not, so each test
knows which of the two answered. Odd first lines (a batch, a notification, odd ids,
deep nesting) are compared with the answers of the server from before, in
test_e2e_first_lines.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest

from hermes_acp import __version__
from hermes_acp.startup.hello import agent_hello
from hermes_acp.transport import MAX_LINE_BYTES
from tests.support.acp_harness import (
    FIXTURES,
    PLAIN_CAPABILITIES,
    ZED_CAPABILITIES,
    ServerProcess,
    server_env,
    spawn_server,
)
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.imports import imported
from tests.support.waiting import until

EARLY = "answered before the server started"
ZED_LINE = (FIXTURES / "zed-initialize.json").read_bytes().strip()
SHUTDOWN_LOG = "input closed; shutting down"


def env_for(home: Path, fake: FakeProvider | None = None) -> dict[str, str]:
    if fake is not None:
        return server_env(home, fake)
    return server_env(home, OPENAI_API_KEY="test", OPENAI_BASE_URL="http://127.0.0.1:9")


def initialize(request_id: Any, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def response_lines(server: ServerProcess, request_id: Any) -> list[bytes]:
    """The lines the server wrote that answer `request_id`, as bytes."""
    found = []
    for line in server.lines:
        message = json.loads(line)
        if "method" not in message and message.get("id") == request_id:
            found.append(line)
    return found


def early_answers(server: ServerProcess) -> int:
    return sum(EARLY in line for line in server.stderr_lines)


def unread_bytes(server: ServerProcess) -> int:
    """Bytes written to the server's stdin that it has not read yet."""
    assert server.process.stdin is not None
    pipe = server.process.stdin.get_extra_info("pipe")
    raw = fcntl.ioctl(pipe.fileno(), termios.FIONREAD, struct.pack("i", 0))
    return int(struct.unpack("i", raw)[0])


def waiting_for_its_first_line(pid: int) -> bool:
    """The process's main thread is blocked in the early wait, a poll(2) (the event loop
    waits in epoll: `do_epoll_wait`, `ep_poll`; the poll in e.g. `poll_schedule_timeout`)."""
    where = Path(f"/proc/{pid}/wchan").read_text()
    return "poll" in where and "epoll" not in where and not where.startswith("ep_")


# -- the same answer ---------------------------------------------------------------------------


PAYLOADS: dict[str, tuple[Any, dict[str, Any]]] = {
    "bare": (1, {"protocolVersion": 1}),
    "plain capabilities, no terminal auth": (
        "plain",
        {
            "protocolVersion": 1,
            "clientCapabilities": PLAIN_CAPABILITIES,
            "clientInfo": {"name": "x", "version": "1"},
        },
    ),
    "a later protocol version": (2**40, {"protocolVersion": 7, "clientCapabilities": ZED_CAPABILITIES}),
    "non-ASCII names and id": (
        "é-✓",
        {"protocolVersion": 1, "clientInfo": {"name": "Éditeur ✓", "title": "編集", "version": "0.1"}},
    ),
    "a lone surrogate in the id": ("\ud800", {"protocolVersion": 1}),
    "_meta everywhere": (
        -3,
        {
            "protocolVersion": 0,
            "_meta": {"a": {"b": [1, {"c": None}]}},
            "clientCapabilities": {
                "_meta": {"terminal_output": True},
                "auth": {"terminal": True, "_meta": {}},
            },
        },
    ),
}


async def test_zeds_initialize_is_answered_early_with_the_servers_own_bytes(tmp_path: Path) -> None:
    async with spawn_server(env_for(tmp_path)) as server:
        await server.send_line(ZED_LINE)
        early = await server.next_message()
        await server.send_line(ZED_LINE)  # the second goes through the server, as always
        assert await server.next_message() == early
        first, second = response_lines(server, 0)
    assert first == second
    assert early["result"] == agent_hello(__version__, terminal_auth=True)
    assert early_answers(server) == 1
    assert sum("initialize from zed (protocol 1)" in line for line in server.stderr_lines) == 2


@pytest.mark.parametrize("name", sorted(PAYLOADS))
async def test_the_early_answer_is_byte_for_byte_the_servers(tmp_path: Path, name: str) -> None:
    request_id, params = PAYLOADS[name]
    async with spawn_server(env_for(tmp_path)) as server:
        early = await server.request(request_id, "initialize", params)
        later = await server.request(request_id, "initialize", params)
        first, second = response_lines(server, request_id)
    assert first == second
    assert early == later and "result" in early
    assert early_answers(server) == 1


# -- what comes with it, around it, instead of it -------------------------------------------------


@pytest.mark.parametrize(
    ("capabilities", "setup_offered"), [(ZED_CAPABILITIES, True), (PLAIN_CAPABILITIES, False)]
)
async def test_requests_written_with_initialize_are_served_by_the_client_it_described(
    fake: FakeProvider, tmp_path: Path, project: Path, capabilities: dict[str, Any], setup_offered: bool
) -> None:
    fake.script([Reply(text="hello from the model")])
    async with spawn_server(env_for(tmp_path, fake)) as server:
        await server.send_together(
            initialize(1, protocolVersion=1, clientCapabilities=capabilities),
            {"jsonrpc": "2.0", "id": 2, "method": "authenticate", "params": {"methodId": "setup"}},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/new",
                "params": {"cwd": str(project), "mcpServers": []},
            },
        )
        assert "result" in await server.response_to(1)
        authenticated = await server.response_to(2)
        session_id = (await server.response_to(3))["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
        assert (await server.request(4, "session/prompt", prompt))["result"]["stopReason"] == "end_turn"
    # the terminal auth method exists only for a client whose hello said it can run one
    assert ("result" in authenticated) == setup_offered, authenticated
    assert early_answers(server) == 1


async def test_a_hello_after_a_quiet_start_is_answered_early_and_the_server_follows(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    # Nothing to read at start: the server's modules are imported in a thread meanwhile.
    async with spawn_server(env_for(tmp_path, fake)) as server:
        await until(lambda: waiting_for_its_first_line(server.pid), "the server to wait for its first line")
        await server.send_line(ZED_LINE)
        assert (await server.next_message())["result"] == agent_hello(__version__, terminal_auth=True)
        reply = await server.request(1, "session/new", {"cwd": str(project), "mcpServers": []})
    assert "sessionId" in reply["result"]
    assert early_answers(server) == 1


async def test_a_first_line_split_across_reads_is_answered_early(tmp_path: Path) -> None:
    async with spawn_server(env_for(tmp_path)) as server:
        assert server.process.stdin is not None
        half = len(ZED_LINE) // 2
        server.process.stdin.write(ZED_LINE[:half])
        await server.process.stdin.drain()
        await until(lambda: unread_bytes(server) == 0, "the server to read the first half")
        await server.send_line(ZED_LINE[half:])
        server.checker.sent(json.loads(ZED_LINE))
        reply = await server.next_message()
    assert reply["id"] == 0 and reply["result"] == agent_hello(__version__, terminal_auth=True)
    assert early_answers(server) == 1


async def test_a_first_line_past_the_early_limit_is_read_by_the_server(tmp_path: Path) -> None:
    padded = initialize("big", protocolVersion=1, _meta={"padding": "x" * 200_000})
    async with spawn_server(env_for(tmp_path)) as server:
        reply = await server.request("big", "initialize", padded["params"])
    assert reply["result"] == agent_hello(__version__, terminal_auth=False)
    assert early_answers(server) == 0


async def test_a_first_line_past_the_transport_limit_is_refused_as_always(tmp_path: Path) -> None:
    async with spawn_server(env_for(tmp_path)) as server:
        assert server.process.stdin is not None
        server.process.stdin.write(b"x" * (MAX_LINE_BYTES + 1) + b"\n")
        await server.send_line(ZED_LINE)
        refused = await server.next_message()
        answered = await server.next_message()
    assert refused["id"] is None and refused["error"]["code"] == -32700
    assert "over the limit" in refused["error"]["data"]["details"]
    assert answered["id"] == 0 and "result" in answered
    assert early_answers(server) == 0


async def test_a_client_that_only_wanted_the_hello_ends_it_without_the_warm_up(tmp_path: Path) -> None:
    # A probe reads the hello and closes the input: the process ends there, without
    # importing what a session would need (the warm-up: ~0.3 s of CPU for nothing).
    env = env_for(tmp_path) | {"PYTHONVERBOSE": "1"}
    async with spawn_server(env) as server:
        await server.send_line(ZED_LINE)
        reply = await server.next_message()
        await server.close_stdin()
        assert await server.wait() == 0
        await server.stop()
    assert reply["id"] == 0 and "result" in reply
    assert early_answers(server) == 1
    warmed = {"hermes_core.agent", "hermes_acp.session.manager", "hermes_core.config"} & imported(server)
    assert warmed == set()
    assert SHUTDOWN_LOG in server.stderr and "Traceback" not in server.stderr


async def test_initialize_without_a_newline_before_the_end_is_still_answered(tmp_path: Path) -> None:
    async with spawn_server(env_for(tmp_path)) as server:
        assert server.process.stdin is not None
        server.checker.sent(json.loads(ZED_LINE))
        server.process.stdin.write(ZED_LINE)
        await server.close_stdin()
        reply = await server.next_message()
        assert await server.wait() == 0
    assert reply["id"] == 0 and "result" in reply
    assert early_answers(server) == 0  # the end of input made it the server's


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_while_the_first_line_is_awaited_shuts_down_as_always(
    tmp_path: Path, signum: int
) -> None:
    async with spawn_server(env_for(tmp_path)) as server:
        await until(lambda: waiting_for_its_first_line(server.pid), "the server to wait for its first line")
        os.kill(server.pid, signum)
        assert await server.wait() == 0
        await server.stop()
    assert server.lines == []
    assert SHUTDOWN_LOG in server.stderr and "Traceback" not in server.stderr


async def test_a_signal_right_after_the_early_answer_shuts_down_as_always(tmp_path: Path) -> None:
    async with spawn_server(env_for(tmp_path)) as server:
        await server.send_line(ZED_LINE)
        await server.next_message()
        os.kill(server.pid, signal.SIGTERM)  # most likely while the server is still imported
        assert await server.wait() == 0
        await server.stop()
    assert SHUTDOWN_LOG in server.stderr and "Traceback" not in server.stderr


async def test_the_trace_records_the_early_answer_in_order(tmp_path: Path) -> None:
    trace = tmp_path / "wire.jsonl"
    args = ("--trace", str(trace), "--log-level", "debug")
    async with spawn_server(env_for(tmp_path), args=args) as server:
        await server.request(1, "initialize", {"protocolVersion": 1})
        await server.request(2, "session/list", {})
    entries = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(entry["dir"], entry["msg"].get("id")) for entry in entries] == [
        ("in", 1),
        ("out", 1),
        ("in", 2),
        ("out", 2),
    ]
    assert early_answers(server) == 1


PROBE = """
import json, os, sys
import hermes_acp.cli, hermes_acp.logs, hermes_core.config_plain
from hermes_acp.startup.early_hello import answer_first_initialize

line = open(sys.argv[1], "rb").read().strip()
read_end, client_end = os.pipe()
answers, write_end = os.pipe()
os.write(client_end, line + b"\\n")
handover = answer_first_initialize(read_end, write_end)
heavy = ("asyncio", "pydantic", "acp", "acp.connection", "acp.schema", "hermes_acp.server")
print(json.dumps({
    "answer": json.loads(os.read(answers, 1 << 20)),
    "imported": [name for name in heavy if name in sys.modules],
    "client": handover.hello.client_name,
}))
"""


def test_the_answer_is_written_before_asyncio_pydantic_or_the_sdk_is_imported() -> None:
    command = [sys.executable, "-c", PROBE, str(FIXTURES / "zed-initialize.json")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    report = json.loads(result.stdout)
    assert report["answer"]["result"] == agent_hello(__version__, terminal_auth=True)
    assert report["imported"] == []
    assert report["client"] == "zed"
