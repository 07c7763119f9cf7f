"""MCP servers as agent tools, against real servers: the SDK's MCPServer over stdio in a
subprocess, and over streamable HTTP and SSE on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from hermes_core.events import Event, ToolCallFinished
from hermes_core.loop.tool_runner import ToolRunner
from hermes_core.mcp.connections import McpConnections, McpServerConfig
from hermes_core.mcp.tools import McpTool, tool_name
from hermes_core.messages import ToolCall
from hermes_core.policy.approval import ApprovalMemory, ApprovalPolicy, Mode
from hermes_core.tools.base import SessionToolState, Tool, ToolContext, ToolLimits
from hermes_core.tools.registry import ToolRegistry
from hermes_core.workspace import LocalWorkspace, WorkspaceScope
from tests.support.agents import ScriptedApprover
from tests.support.mcp_server import HttpEndpoints, http_servers

# One event loop for the module, so the servers the fixture starts serve every test.
pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER = str(Path(__file__).parent / "support" / "mcp_server.py")


def stdio(name: str, **env: str) -> McpServerConfig:
    return McpServerConfig(name, command=sys.executable, args=[SERVER], env=dict(env))


@dataclass
class Shared:
    connections: McpConnections
    problems: list[str]
    cwd: Path
    tools: dict[str, Tool]


@pytest.fixture(scope="module")
def endpoints() -> Iterator[HttpEndpoints]:
    with http_servers() as served:
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory, endpoints: HttpEndpoints) -> AsyncIterator[Shared]:
    cwd = tmp_path_factory.mktemp("project")
    connections = McpConnections(call_timeout=1.0)
    problems = await connections.start(
        [
            stdio("test", HERMES_MCP_TEST="from-config", HERMES_MCP_SNOOZE_DIR=str(cwd)),
            McpServerConfig("ghost", command="/nonexistent/mcp-server"),
            McpServerConfig(
                "remote",
                url=endpoints.streamable_http,
                headers={"Authorization": "Bearer t0ken"},
                transport="http",
            ),
            McpServerConfig("old", url=endpoints.sse, headers={"X-Probe": "sse-header"}, transport="sse"),
        ],
        cwd=cwd,
        timeout=30,
    )
    yield Shared(connections, problems, cwd, {tool.name: tool for tool in connections.tools()})
    await connections.aclose()


def context(cwd: Path, **limits: int) -> ToolContext:
    events: list[Event] = []
    return ToolContext(
        "call-1",
        LocalWorkspace(WorkspaceScope(cwd)),
        SessionToolState(),
        events.append,
        ToolLimits(**limits),
    )


async def call(shared: Shared, name: str, /, **arguments: object) -> tuple[bool, str]:
    tool = shared.tools[name]
    result = await tool.run(tool.parse(dict(arguments)), context(shared.cwd))
    return result.ok, result.text


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # a zombie still answers; only a reaped process is gone
    except ProcessLookupError:
        return False
    return True


async def test_tools_are_listed_with_names_schemas_kinds_and_approval(shared: Shared) -> None:
    names = {name for name in shared.tools if name.startswith("mcp__test__")}
    assert names == {
        f"mcp__test__{tool}"
        for tool in ("add", "echo", "where", "fail", "snooze", "pid", "crash", "header", "snapshot")
    }
    add = shared.tools["mcp__test__add"]
    spec = add.spec()
    assert spec.description == "Add two integers."
    assert spec.parameters["type"] == "object"
    assert spec.parameters["required"] == ["a", "b"]
    assert spec.parameters["properties"]["a"]["type"] == "integer"
    assert (add.kind, add.needs_approval, add.read_only) == ("other", True, False)

    where = shared.tools["mcp__test__where"]  # annotated readOnlyHint, openWorldHint=False
    # The hint is the server's word: the tool still asks (it is offered in plan mode).
    assert (where.kind, where.needs_approval, where.read_only) == ("read", True, True)
    assert "variable" in where.spec().parameters["properties"]


async def test_calls_return_the_servers_results(shared: Shared) -> None:
    assert await call(shared, "mcp__test__add", a=2, b=40) == (True, "42")
    assert await call(shared, "mcp__test__echo", text="héllo\nworld") == (True, "héllo\nworld")


async def test_stdio_server_runs_outside_the_workspace_with_the_given_env(shared: Shared) -> None:
    ok, text = await call(shared, "mcp__test__where")
    assert ok
    # In `/`, not the session's folder: a `python -m` server imported the workspace's copy.
    assert text == "cwd=/ HERMES_MCP_TEST=from-config"
    assert "HERMES_MCP_TEST" not in os.environ


async def test_a_raising_tool_gives_a_failed_result_with_its_message(shared: Shared) -> None:
    ok, text = await call(shared, "mcp__test__fail", message="the disk is full")
    assert not ok
    assert "the disk is full" in text


async def test_images_and_resources_become_text_notes(shared: Shared) -> None:
    ok, text = await call(shared, "mcp__test__snapshot")
    assert ok
    lines = text.splitlines()
    assert lines[0] == "Here is the screen."
    assert lines[1] == "[image (image/png, 2.0 KB) returned by the tool; not shown]"
    assert lines[2:] == ["[resource <file:///notes.txt>]", "remember the milk"]


async def test_output_is_capped_to_the_limit(shared: Shared) -> None:
    tool = shared.tools["mcp__test__echo"]
    text = "".join(f"{i:05d}" for i in range(2_000))
    result = await tool.run(tool.parse({"text": text}), context(shared.cwd, max_output_chars=200))
    assert result.ok
    assert len(result.text) < 300
    assert result.text.startswith("00000")
    assert result.text.endswith("01999")
    assert "characters cut" in result.text


async def test_a_slow_call_times_out_and_the_server_keeps_working(shared: Shared) -> None:
    ok, text = await call(shared, "mcp__test__snooze", seconds=30)
    assert not ok
    assert "timed out after 1 s" in text
    assert await call(shared, "mcp__test__add", a=1, b=1) == (True, "2")


async def test_cancelling_a_call_cancels_it_and_the_server_keeps_working(shared: Shared) -> None:
    tool = shared.tools["mcp__test__snooze"]
    started = shared.cwd / "snooze.started"
    started.unlink(missing_ok=True)
    running = asyncio.create_task(tool.run(tool.parse({"seconds": 30}), context(shared.cwd)))
    for _ in range(3000):  # until the call is running in the server (30 s: only a hang gets that far)
        if started.exists():
            break
        await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await call(shared, "mcp__test__add", a=2, b=2) == (True, "4")


async def test_the_runner_checks_required_arguments_and_asks_approval_for_every_tool(
    shared: Shared,
) -> None:
    registry = ToolRegistry(shared.connections.tools())
    approver = ScriptedApprover()
    runner = ToolRunner(
        tools=registry,
        policy=ApprovalPolicy(Mode.ASK, ApprovalMemory()),
        approver=approver,
        workspace=LocalWorkspace(WorkspaceScope(shared.cwd)),
        state=SessionToolState(),
        limits=ToolLimits(),
    )
    calls = runner.prepare(
        [
            ToolCall("c1", "mcp__test__add", json.dumps({"a": 1})),
            ToolCall("c2", "mcp__test__add", json.dumps({"a": 1, "b": 2})),
            ToolCall("c3", "mcp__test__where", "{}"),
            ToolCall("c4", "mcp__test__echo", "[1]"),
        ]
    )
    finished = {e.call_id: e for e in [e async for e in runner.run(calls)] if isinstance(e, ToolCallFinished)}

    assert finished["c1"].status == "failed"
    assert "Invalid arguments for mcp__test__add: b: Field required" in finished["c1"].result
    assert (finished["c2"].status, finished["c2"].result) == ("completed", "3")
    assert finished["c3"].status == "completed"
    assert finished["c4"].status == "failed"
    # Annotated read-only or not, each asks (the scripted approver allows once).
    assert [request.tool for request in approver.requests] == ["mcp__test__add", "mcp__test__where"]
    assert approver.requests[1].scope == "mcp__test__where:test/where"
    assert approver.requests[0].arguments == {"a": 1, "b": 2}
    assert approver.requests[0].title == 'test: add {"a": 1, "b": 2}'


async def test_a_missing_command_is_reported_and_the_other_servers_still_work(shared: Shared) -> None:
    assert len(shared.problems) == 1
    assert shared.problems[0].startswith("MCP server 'ghost': cannot start it: No such file or directory")
    assert sorted(shared.connections.connected()) == ["old", "remote", "test"]
    assert not any(name.startswith("mcp__ghost__") for name in shared.tools)


async def test_streamable_http_server_tools_work_and_get_the_headers(shared: Shared) -> None:
    assert await call(shared, "mcp__remote__add", a=20, b=22) == (True, "42")
    assert await call(shared, "mcp__remote__header", name="Authorization") == (True, "Bearer t0ken")


async def test_sse_server_tools_work_and_get_the_headers(shared: Shared) -> None:
    assert await call(shared, "mcp__old__echo", text="over sse") == (True, "over sse")
    assert await call(shared, "mcp__old__header", name="X-Probe") == (True, "sse-header")


async def test_a_crashed_server_gives_error_results_and_close_leaves_no_process(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    connections = McpConnections(call_timeout=5.0)
    problems = await connections.start([stdio("one"), stdio("two")], cwd=tmp_path, timeout=30)
    assert problems == []
    tools = {tool.name: tool for tool in connections.tools()}
    ctx = context(tmp_path)

    async def run(name: str, **arguments: object) -> tuple[bool, str]:
        result = await tools[name].run(tools[name].parse(arguments), ctx)
        return result.ok, result.text

    # The server logs a failing tool on its stderr, which must land on ours, never on stdout.
    assert (await run("mcp__two__fail", message="logged"))[0] is False
    out, err = capfd.readouterr()
    assert out == ""
    assert "logged" in err

    pids = [int((await run(f"mcp__{server}__pid"))[1]) for server in ("one", "two")]
    assert all(pid_alive(pid) for pid in pids)

    ok, text = await run("mcp__one__crash")
    assert not ok
    assert "exited or closed the connection" in text
    ok, text = await run("mcp__one__add", a=1, b=2)
    assert not ok
    assert "'one' is not connected" in text
    assert await run("mcp__two__add", a=1, b=2) == (True, "3")
    assert connections.connected() == ["two"]

    await connections.aclose()
    assert not any(pid_alive(pid) for pid in pids)
    assert not [task for task in asyncio.all_tasks() if task.get_name() in ("mcp:one", "mcp:two")]
    ok, text = await run("mcp__two__add", a=1, b=2)
    assert not ok
    assert "'two' is not connected" in text


async def test_a_server_that_never_answers_is_dropped_without_holding_up_the_rest(
    tmp_path: Path, endpoints: HttpEndpoints
) -> None:
    pid_file = tmp_path / "silent.pid"
    # Reads its stdin until EOF and never writes a byte, like a server stuck starting up.
    silent = McpServerConfig(
        "silent", command="sh", args=["-c", f"echo $$ > {pid_file}; while read -r _; do :; done"]
    )
    connections = McpConnections()
    problems = await connections.start(
        [
            silent,
            McpServerConfig("remote", url=endpoints.streamable_http, transport="http"),
            McpServerConfig("socket", url="ws://127.0.0.1:1/mcp", transport="websocket"),  # type: ignore[arg-type]
            McpServerConfig("nowhere", url="", transport="http"),
        ],
        cwd=tmp_path,
        timeout=1.0,
    )
    assert problems == [
        "MCP server 'socket': unsupported transport 'websocket'; skipped",
        "MCP server 'nowhere': http transport needs an http(s) URL, got ''; skipped",
        "MCP server 'silent': did not connect within 1 s; skipped",
    ]
    assert connections.connected() == ["remote"]
    assert "mcp__remote__add" in {tool.name for tool in connections.tools()}

    await connections.aclose()
    assert not pid_alive(int(pid_file.read_text()))


async def test_tool_names_are_sanitised_short_and_unique(tmp_path: Path, endpoints: HttpEndpoints) -> None:
    assert tool_name("my server.v2", "do/thing") == "mcp__my_server_v2__do_thing"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == 64
    assert long != tool_name("s" * 40, "t" * 41)

    connections = McpConnections()
    problems = await connections.start(
        [
            McpServerConfig("a.b", url=endpoints.streamable_http, transport="http"),
            McpServerConfig("a b", url=endpoints.streamable_http, transport="http"),
        ],
        cwd=tmp_path,
    )
    try:
        assert problems == []
        adds = [
            tool for tool in connections.tools() if isinstance(tool, McpTool) and tool.remote_name == "add"
        ]
        assert [(tool.server, tool.name) for tool in adds] == [
            ("a.b", "mcp__a_b__add"),
            ("a b", "mcp__a_b__add_2"),
        ]
    finally:
        await connections.aclose()


async def test_a_command_written_relative_is_the_session_folders_file(tmp_path: Path) -> None:
    """The server starts in `/`, but an entry naming `bin/serve` means the project's file."""
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    script = project / "bin" / "serve"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(SERVER)}\n")
    script.chmod(0o755)
    connections = McpConnections()
    try:
        entry = McpServerConfig("rel", command="bin/serve")
        problems = await connections.start([entry], cwd=project, timeout=30)
        assert problems == []
        assert "mcp__rel__add" in {tool.name for tool in connections.tools()}
    finally:
        await connections.aclose()


async def test_no_search_path_of_the_server_leads_into_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor started from a shell where direnv exported the project's `src` and
    `node_modules`: a server's `python -m` or `require` found a module a sandboxed command
    wrote there. Entries inside the session's folder, as written or through a link, go."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "lib").mkdir(parents=True)
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(project / "lib")
    outside = str(elsewhere)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(project / "src"), str(tmp_path / "link"), outside]))
    monkeypatch.setenv("NODE_PATH", os.pathsep.join([str(project / "node_modules"), "rel/lib", outside]))
    connections = McpConnections()
    try:
        assert await connections.start([stdio("paths")], cwd=project, timeout=30) == []
        where = next(tool for tool in connections.tools() if tool.name == "mcp__paths__where")
        for variable in ("PYTHONPATH", "NODE_PATH"):
            result = await where.run(where.parse({"variable": variable}), context(project))
            assert result.text == f"cwd=/ {variable}={outside}", result.text
    finally:
        await connections.aclose()
