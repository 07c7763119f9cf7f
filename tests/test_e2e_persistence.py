"""Sessions that outlive the process: load (with replay), resume, list, fork, close, delete."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.acp_harness import AcpClient, ServerProcess, connected, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.processes import alive, pids_running, unique_seconds, wait_gone
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

SETTINGS = {"HERMES_ACP_MODELS": "configured-two"}


SERVER_SETUP = ServerSetup(settings=SETTINGS)


@pytest.fixture(scope="module")
def env(fake: FakeProvider, server_home: Path) -> dict[str, str]:
    """The module server's environment: other servers on the same store."""
    return server_env(server_home, fake, **SETTINGS)


def load_params(session_id: str, cwd: Path) -> dict[str, Any]:
    return {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}


async def a_conversation(client: AcpClient, fake: FakeProvider, project: Path) -> str:
    """A session with text, a thought, a plan and an edit in its history."""
    sid = (await client.new_session(project))["sessionId"]
    todo = {"action": "write", "items": [{"content": "Create notes", "status": "completed"}]}
    fake.script(
        [
            Reply(reasoning="Planning first.", tool_calls=[ToolCallSpec("todo", todo, id="call_todo")]),
            Reply(
                tool_calls=[
                    ToolCallSpec("write_file", {"path": "notes.md", "content": "# Notes\n"}, id="call_w")
                ]
            ),
            Reply(text="Created notes.md for you."),
        ]
    )
    assert await client.prompt(sid, "Please create notes") == {"stopReason": "end_turn"}
    return sid


def session_updates_before_response(
    server: ServerProcess, session_id: str, start: int
) -> tuple[list[dict], int]:
    """The updates for `session_id` written after index `start`, and where the next response is."""
    messages = server.received[start:]
    response_at = next(
        i for i, m in enumerate(messages) if "method" not in m and ("result" in m or "error" in m)
    )
    updates = [
        m["params"]["update"]
        for m in messages[:response_at]
        if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
    ]
    return updates, response_at


async def test_load_replays_the_whole_conversation_before_answering(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = await a_conversation(client, fake, project)
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "configured-two"}
    )
    start = len(server.received)
    result = await client.request("session/load", load_params(sid, project))
    updates, _ = session_updates_before_response(server, sid, start)
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds[0] == "user_message_chunk"
    assert updates[0]["content"]["text"] == "Please create notes"
    assert "agent_thought_chunk" in kinds
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "Created notes.md for you."
    write = [u for u in updates if u.get("toolCallId") == "call_w"]
    assert write[0]["sessionUpdate"] == "tool_call"
    assert write[-1]["status"] == "completed"
    diff = next(c for c in write[-1]["content"] if c["type"] == "diff")
    assert diff["newText"] == "# Notes\n" and diff["oldText"] is None
    plan = [u for u in updates if u["sessionUpdate"] == "plan"][-1]
    assert plan["entries"] == [{"content": "Create notes", "priority": "medium", "status": "completed"}]
    assert "usage_update" in kinds and "available_commands_update" in kinds
    # mode and model came back with it
    assert result["modes"]["currentModeId"] == "accept_edits"
    model = next(o for o in result["configOptions"] if o["id"] == "model")
    assert model["currentValue"] == "configured-two"


async def test_a_loaded_session_continues_the_conversation(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = await a_conversation(client, fake, project)
    await client.request("session/load", load_params(sid, project))
    fake.script([Reply(text="Yes, notes.md exists.")])
    before = len(fake.requests)
    assert await client.prompt(sid, "Did you create it?") == {"stopReason": "end_turn"}
    history = str(fake.requests[before].body["messages"])
    assert "Please create notes" in history and "Created notes.md for you." in history


async def test_resume_restores_without_replay(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = await a_conversation(client, fake, project)
    start = len(server.received)
    result = await client.request("session/resume", load_params(sid, project))
    updates, _ = session_updates_before_response(server, sid, start)
    assert updates == []
    assert result["modes"]["currentModeId"] == "ask"
    await client.wait_for(
        lambda: [
            m
            for m in server.received[start:]
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
            and m["params"]["sessionId"] == sid
        ]
    )
    fake.script([Reply(text="Still with you.")])
    before = len(fake.requests)
    assert await client.prompt(sid, "Continue") == {"stopReason": "end_turn"}
    assert "Please create notes" in str(fake.requests[before].body["messages"])


async def test_a_session_not_yet_prompted_can_be_loaded_and_resumed(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    """acp-tck (ACP-RESUME-001, ACP-LOAD-003): a session just created, with nothing stored
    yet, is still a session to load or resume."""
    sid = (await client.new_session(project))["sessionId"]
    for method in ("session/resume", "session/load"):
        result = await client.request(method, load_params(sid, project))
        assert result["modes"]["currentModeId"] == "ask", method
    fake.script([Reply(text="here")])
    assert await client.prompt(sid, "hello") == {"stopReason": "end_turn"}


async def test_a_session_never_prompted_is_resumed_by_another_process_with_its_choices(
    env: dict[str, str], fake: FakeProvider, project: Path
) -> None:
    """acpx runs one process per command: `sessions new`, `set-mode`, then a prompt in a
    new process that resumes the session. A session exists, and keeps what was chosen
    for it, from session/new on."""
    async with connected(env) as (_, first):
        sid = (await first.new_session(project))["sessionId"]
        await first.request("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        await first.request(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "configured-two"}
        )
    for method in ("session/resume", "session/load"):
        async with connected(env) as (_, later):
            result = await later.request(method, load_params(sid, project))
            assert result["modes"]["currentModeId"] == "plan", method
            model = next(o for o in result["configOptions"] if o["id"] == "model")
            assert model["currentValue"] == "configured-two", method
    async with connected(env) as (_, later):
        await later.request("session/resume", load_params(sid, project))
        fake.script([Reply(text="planned")])
        before = len(fake.requests)
        assert await later.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert fake.requests[before].body["model"] == "configured-two"


async def test_unknown_ids_are_32002(client: AcpClient, project: Path) -> None:
    for method, params in (
        ("session/load", load_params("nope", project)),
        ("session/resume", load_params("nope", project)),
        ("session/fork", load_params("nope", project)),
        ("session/close", {"sessionId": "nope"}),
    ):
        with pytest.raises(RequestError) as caught:
            await client.request(method, params)
        assert caught.value.code == -32002, method


async def test_deleting_an_unknown_or_already_deleted_session_succeeds(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    """The spec: deleting a session that does not exist SHOULD succeed (acp-tck DELETE-002),
    unlike close, load and resume of an unknown id, which answer -32002."""
    assert await client.request("session/delete", {"sessionId": "nope"}) == {}
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="hi")])
    await client.prompt(sid, "hello")
    assert await client.request("session/delete", {"sessionId": sid}) == {}
    assert await client.request("session/delete", {"sessionId": sid}) == {}
    with pytest.raises(RequestError) as caught:
        await client.request("session/load", load_params(sid, project))
    assert caught.value.code == -32002


async def test_list_is_newest_first_filtered_and_paged(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    empty = (await client.new_session(here))["sessionId"]  # no messages: not listed
    made = []
    for i in range(55):
        sid = (await client.new_session(here))["sessionId"]
        fake.script([Reply(text="ok")])
        await client.prompt(sid, f"task number {i}")
        made.append(sid)
    other = (await client.new_session(there))["sessionId"]
    fake.script([Reply(text="ok")])
    await client.prompt(other, "elsewhere")

    first = await client.request("session/list", {"cwd": str(here)})
    assert len(first["sessions"]) == 50 and first["nextCursor"]
    newest = first["sessions"][0]
    assert newest["sessionId"] == made[-1]
    assert newest["title"] == "task number 54"
    assert newest["cwd"] == str(here) and newest["updatedAt"].endswith("Z")
    # a session created between pages does not disturb the next page
    late = (await client.new_session(here))["sessionId"]
    fake.script([Reply(text="ok")])
    await client.prompt(late, "late arrival")
    second = await client.request("session/list", {"cwd": str(here), "cursor": first["nextCursor"]})
    assert "nextCursor" not in second
    listed = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert listed == list(reversed(made))
    assert empty not in listed and other not in listed

    everywhere = await client.request("session/list", {})
    assert everywhere["sessions"][0]["sessionId"] == late
    with pytest.raises(RequestError) as caught:
        await client.request("session/list", {"cursor": "not-a-cursor"})
    assert caught.value.code == -32602


async def test_fork_copies_the_history(client: AcpClient, fake: FakeProvider, project: Path) -> None:
    sid = await a_conversation(client, fake, project)
    forked = await client.request("session/fork", load_params(sid, project))
    fork_id = forked["sessionId"]
    assert fork_id != sid and forked["modes"]["currentModeId"] == "ask"
    fake.script([Reply(text="forked reply"), Reply(text="original reply")])
    before = len(fake.requests)
    await client.prompt(fork_id, "only in the fork")
    await client.prompt(sid, "only in the original")
    fork_history, original_history = (str(r.body["messages"]) for r in fake.requests[before : before + 2])
    assert "Please create notes" in fork_history and "Please create notes" in original_history
    assert "only in the fork" not in original_history


async def test_close_cancels_the_turn_and_keeps_the_history(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="slow " * 300, chunk_size=5, chunk_delay=0.01)])
    prompt = client.start_prompt(sid, "keep this question")
    await client.wait_for(lambda: client.session_updates(sid, "agent_message_chunk"))
    assert await client.request("session/close", {"sessionId": sid}) == {}
    assert (await asyncio.wait_for(prompt, 30)) == {"stopReason": "cancelled"}
    with pytest.raises(RequestError) as caught:
        await client.prompt(sid, "are you there?")
    assert caught.value.code == -32002
    await client.request("session/load", load_params(sid, project))
    assert "keep this question" in client.text(sid, "user_message_chunk")


async def test_close_stops_the_sessions_background_processes(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    pid_file = project / "server.pid"
    seconds = unique_seconds(60)
    serve = {"command": f"echo $$ > {pid_file}; exec sleep {seconds}", "background": True}
    fake.script([Reply(tool_calls=[ToolCallSpec("terminal", serve)]), Reply(text="Started the server.")])
    assert await client.prompt(sid, "start the dev server") == {"stopReason": "end_turn"}
    # Its host pid: inside the sandbox `$$` is its pid in the sandbox's own namespace.
    [pid] = await client.wait_for(lambda: pids_running("sleep", seconds))
    assert alive(pid)
    await client.request("session/close", {"sessionId": sid})
    await wait_gone(pid, "a closed session's background process")


async def test_delete_removes_it(client: AcpClient, fake: FakeProvider, project: Path) -> None:
    sid = await a_conversation(client, fake, project)
    assert await client.request("session/delete", {"sessionId": sid}) == {}
    listed = await client.request("session/list", {"cwd": str(project)})
    assert sid not in [s["sessionId"] for s in listed["sessions"]]
    with pytest.raises(RequestError) as caught:
        await client.request("session/load", load_params(sid, project))
    assert caught.value.code == -32002


async def test_mode_model_and_approvals_survive_a_restart(
    env: dict[str, str], fake: FakeProvider, project: Path
) -> None:
    async with connected(env, permission="allow_always") as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
        await client.request(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "configured-two"}
        )
        command = ToolCallSpec("terminal", {"command": "echo first"})
        fake.script([Reply(tool_calls=[command]), Reply(text="ran it")])
        await client.prompt(sid, "run echo")
        assert len(client.permission_requests) == 1
    async with connected(env, permission="reject_once") as (_, client):
        result = await client.request("session/resume", load_params(sid, project))
        assert result["modes"]["currentModeId"] == "accept_edits"
        assert (
            next(o for o in result["configOptions"] if o["id"] == "model")["currentValue"] == "configured-two"
        )
        fake.script(
            [Reply(tool_calls=[ToolCallSpec("terminal", {"command": "echo second"})]), Reply(text="again")]
        )
        before = len(fake.requests)
        await client.prompt(sid, "run echo again")
        assert client.permission_requests == []  # "always" was remembered
        assert fake.requests[before].body["model"] == "configured-two"
        assert "second" in str(fake.requests[-1].body["messages"][-1])


async def test_the_system_prompt_survives_a_restart_byte_for_byte(
    env: dict[str, str], fake: FakeProvider, project: Path
) -> None:
    """The prompt cache keeps hitting after a resume or load: the system prompt is the one
    the session started with, though the context files changed in between."""
    (project / "AGENTS.md").write_text("Use tabs.\n")
    async with connected(env) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="noted")])
        first = len(fake.requests)
        await client.prompt(sid, "hello")
    (project / "AGENTS.md").write_text("Use spaces, never tabs.\n")
    for method in ("session/resume", "session/load"):
        async with connected(env) as (_, client):
            await client.request(method, load_params(sid, project))
            fake.script([Reply(text="still here")])
            later = len(fake.requests)
            await client.prompt(sid, "again")
        system = [fake.requests[i].body["messages"][0] for i in (first, later)]
        assert system[0]["role"] == "system" and "Use tabs." in system[0]["content"]
        assert system[1] == system[0], method
    async with connected(env) as (_, client):  # a new session sees the edited file
        fresh = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="hi")])
        await client.prompt(fresh, "hello")
        assert "never tabs" in fake.requests[-1].body["messages"][0]["content"]


async def test_a_killed_server_loses_at_most_the_message_in_flight(
    env: dict[str, str], fake: FakeProvider, project: Path
) -> None:
    async with spawn_server(env, check_exit=False) as process:
        client = process.sdk_client()
        await client.initialize()
        sid = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="first answer")])
        await client.prompt(sid, "first question")
        fake.script([Reply(text="never finished " * 200, chunk_size=5, chunk_delay=0.01)])
        client.start_prompt(sid, "second question")
        await client.wait_for(lambda: "never finished" in client.text(sid))
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
        await client.aclose()
    async with connected(env) as (_, client):
        await client.request("session/load", load_params(sid, project))
        replayed_user = client.text(sid, "user_message_chunk")
        assert "first question" in replayed_user and "second question" in replayed_user
        assert "first answer" in client.text(sid)
        fake.script([Reply(text="picking up again")])
        assert await client.prompt(sid, "where were we?") == {"stopReason": "end_turn"}


async def test_a_server_killed_mid_tool_keeps_the_plan_and_always_answers(
    env: dict[str, str], fake: FakeProvider, project: Path
) -> None:
    seconds = unique_seconds(30)  # a duration of its own finds its host pid
    todo = {"action": "write", "items": [{"content": "Check the build", "status": "in_progress"}]}
    async with spawn_server(env, check_exit=False) as process:
        client = process.sdk_client()
        client.permission = "allow_always"
        await client.initialize()
        sid = (await client.new_session(project))["sessionId"]
        fake.script(
            [
                Reply(tool_calls=[ToolCallSpec("todo", todo)]),
                Reply(tool_calls=[ToolCallSpec("terminal", {"command": "echo built"})]),
                Reply(tool_calls=[ToolCallSpec("terminal", {"command": f"exec sleep {seconds}"})]),
            ]
        )
        client.start_prompt(sid, "check the build")
        [pid] = await client.wait_for(lambda: pids_running("sleep", seconds))
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
        await client.aclose()
    await wait_gone(pid, "the command, with the server that ran it")
    async with connected(env, permission="reject_once") as (_, client):
        await client.request("session/load", load_params(sid, project))
        plans = client.session_updates(sid, "plan")
        assert plans and plans[-1]["entries"][0]["content"] == "Check the build"
        fake.script(
            [Reply(tool_calls=[ToolCallSpec("terminal", {"command": "echo again"})]), Reply(text="ok")]
        )
        await client.prompt(sid, "once more")
        assert client.permission_requests == []  # "always" for echo survived the kill
        assert "again" in str(fake.requests[-1].body["messages"][-1])


async def test_twenty_turns_across_a_restart_keep_extending_the_cached_prefix(
    env: dict[str, str], fake: FakeProvider, project: Path
) -> None:
    """Each request to the provider repeats the previous one's messages and tools exactly,
    through tool calls and through a server restart with session/resume in the middle."""
    (project / "data.txt").write_text("".join(f"row {i}\n" for i in range(30)))
    read = {"path": "data.txt", "limit": 3}

    async def turns(client: AcpClient, sid: str, numbers: range) -> None:
        for i in numbers:
            fake.script(
                [Reply(tool_calls=[ToolCallSpec("read_file", read | {"offset": i + 1})]), Reply(text=f"a{i}")]
            )
            assert await client.prompt(sid, f"question {i}") == {"stopReason": "end_turn"}

    first = len(fake.requests)
    async with connected(env) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await turns(client, sid, range(10))
    (project / "AGENTS.md").write_text("Edited while the server was down.\n")
    async with connected(env) as (_, client):
        await client.request("session/resume", load_params(sid, project))
        await turns(client, sid, range(10, 20))
    bodies = [r.body for r in fake.requests[first:]]
    assert len(bodies) == 40
    for earlier, later in itertools.pairwise(bodies):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert later["tools"] == earlier["tools"]
