"""session/cancel in every phase of a turn; the prompt answers "cancelled" and nothing stays stuck."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, ServerProcess
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.processes import pids_running, unique_seconds, wait_gone
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")


# Long backoffs allowed, so a cancel during one is what ends it.
SERVER_SETUP = ServerSetup(settings={"HERMES_ACP_RETRY_CAP_SECONDS": "60", "HERMES_ACP_MAX_RETRIES": "3"})


async def cancel_and_check(client: AcpClient, session: str, prompt: asyncio.Task[dict[str, Any]]) -> None:
    await client.cancel(session)
    assert await asyncio.wait_for(prompt, 30) == {"stopReason": "cancelled"}  # the cap only catches a hang


async def next_prompt_works(client: AcpClient, fake: FakeProvider, session: str) -> None:
    fake.script([Reply(text="fresh answer")])
    before = len(client.session_updates(session, "agent_message_chunk"))
    assert await client.prompt(session, "are you still there?") == {"stopReason": "end_turn"}
    later = client.session_updates(session, "agent_message_chunk")[before:]
    assert "".join(u["content"]["text"] for u in later) == "fresh answer"


def open_tool_calls(client: AcpClient, session: str) -> set[str]:
    final: dict[str, str] = {}
    for update in client.session_updates(session):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and update.get("status"):
            final[update["toolCallId"]] = update["status"]
    return {call for call, status in final.items() if status not in ("completed", "failed")}


def released_terminals(client: AcpClient) -> set[str]:
    return {p["terminalId"] for m, p in client.calls if m == "terminal/release"}


async def test_cancel_during_streaming(client: AcpClient, fake: FakeProvider, session: str) -> None:
    fake.script([Reply(text="word " * 400, chunk_size=5, chunk_delay=0.01)])
    disconnects = fake.disconnects
    prompt = client.start_prompt(session, "write an essay")
    await client.wait_for(lambda: client.session_updates(session, "agent_message_chunk"))
    await cancel_and_check(client, session, prompt)
    await asyncio.to_thread(fake.wait_for_disconnects, disconnects + 1, 30)  # the model stream was closed
    await next_prompt_works(client, fake, session)


async def test_cancel_during_a_permission_request(
    client: AcpClient, fake: FakeProvider, session: str, tmp_path: Path
) -> None:
    never = asyncio.Event()

    async def undecided(params: dict[str, Any]) -> dict[str, Any]:
        await never.wait()
        return {"outcome": {"outcome": "cancelled"}}

    client.permission = undecided
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("write_file", {"path": "x.txt", "content": "x"}, id="call_perm")])]
    )
    prompt = client.start_prompt(session, "write x")
    await client.wait_for(
        lambda: (
            client.permission_requests
            and client.permission_requests[-1]["toolCall"]["toolCallId"] == "call_perm"
        )
    )
    await cancel_and_check(client, session, prompt)
    never.set()
    assert not (tmp_path / "project" / "x.txt").exists()
    assert client.tool_updates("call_perm")[-1]["status"] == "failed"
    assert not open_tool_calls(client, session)
    client.permission = "allow_once"
    await next_prompt_works(client, fake, session)


async def test_cancel_during_a_retry_backoff(client: AcpClient, fake: FakeProvider, session: str) -> None:
    # A 60 s backoff: a cancel that waited for it would not be answered within the 30 s cap.
    fake.script([Reply.rate_limited(retry_after=60)])
    before = len(fake.requests)
    prompt = client.start_prompt(session, "hello")
    await asyncio.to_thread(fake.wait_for_requests, before + 1, 30)
    await client.wait_for(lambda: "retrying in" in json.dumps(client.session_updates(session)))  # backing off
    await cancel_and_check(client, session, prompt)
    assert len(fake.requests) == before + 1  # no retry after the cancel
    await next_prompt_works(client, fake, session)


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_cancel_during_a_running_command_kills_it(
    client: AcpClient, fake: FakeProvider, tmp_path: Path, where: str
) -> None:
    if where == "local":
        client.capabilities = PLAIN_CAPABILITIES | {"terminal": False}
        await client.initialize()
    project = tmp_path / "project"
    project.mkdir()
    session = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
    pid_file = project / "pid"
    seconds = unique_seconds(30)  # a duration of its own finds its host pid
    command = f"echo $$ > {pid_file}; exec sleep {seconds}"
    fake.script([Reply(tool_calls=[ToolCallSpec("terminal", {"command": command}, id="call_sleep")])])
    prompt = client.start_prompt(session, "sleep")
    [pid] = await client.wait_for(lambda: pids_running("sleep", seconds))
    await cancel_and_check(client, session, prompt)
    await wait_gone(pid)
    assert client.tool_updates("call_sleep")[-1]["status"] == "failed"
    if where == "editor":
        # A cancel can land before terminal/create's answer reaches the agent; it releases
        # the terminal once the answer does, which may be after the process is gone.
        await client.wait_for(lambda: set(client.terminals) <= released_terminals(client))
        assert set(client.terminals) <= released_terminals(client)
    await next_prompt_works(client, fake, session)


async def test_cancel_while_the_editor_is_still_creating_the_terminal_stops_it(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    """The command already runs in the editor when the cancel lands, but terminal/create
    has not answered yet: once it does, the agent kills and releases that terminal."""
    project = tmp_path / "project"
    project.mkdir()
    session = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
    pid_file = project / "pid"
    seconds = unique_seconds(30)
    command = f"echo $$ > {pid_file}; exec sleep {seconds}"
    fake.script([Reply(tool_calls=[ToolCallSpec("terminal", {"command": command})])])
    client.terminal_create_delay = 0.5
    try:
        prompt = client.start_prompt(session, "sleep")
        [pid] = await client.wait_for(lambda: pids_running("sleep", seconds))
        await cancel_and_check(client, session, prompt)
        await wait_gone(pid)
        await client.wait_for(lambda: [m for m, _ in client.calls if m == "terminal/release"])
    finally:
        client.terminal_create_delay = 0.0
    await next_prompt_works(client, fake, session)


async def test_cancel_before_the_first_model_call(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, session: str
) -> None:
    fake.script([Reply(text="should never be asked for")])
    before = len(fake.requests)
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "quick"}]}
    await server.send_together(
        {"jsonrpc": "2.0", "id": "early", "method": "session/prompt", "params": prompt},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}},
    )
    reply = await server.response_to("early")
    assert reply["result"] == {"stopReason": "cancelled"}
    await asyncio.sleep(0.1)
    assert len(fake.requests) == before
    assert not client.session_updates(session, "agent_message_chunk")
    fake.script([])
    await next_prompt_works(client, fake, session)


async def test_cancel_while_idle_does_nothing(client: AcpClient, fake: FakeProvider, session: str) -> None:
    await client.cancel(session)
    await client.cancel(session)
    await next_prompt_works(client, fake, session)
