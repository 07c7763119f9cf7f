"""A fresh thread never loads the SDK's schema; a request only the schema can judge loads
it then, and gets the same answer as ever.

The server runs with PYTHONVERBOSE, so its stderr names every module it imports, from
any thread: the schema's 280 models cost 330-630 ms and 8-24 MB the first time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp.exceptions import RequestError

from tests.support.acp_harness import ZED_CAPABILITIES, AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.imports import imported

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCHEMA = "acp.schema"


async def test_a_fresh_thread_runs_without_the_schema_until_a_request_needs_it(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    (project / "notes.md").write_text("remember the milk\n")
    extra = tmp_path / "shared"
    extra.mkdir()
    env = server_env(tmp_path, fake, PYTHONVERBOSE="1")
    async with spawn_server(env) as server:
        client: AcpClient = server.sdk_client(dict(ZED_CAPABILITIES))
        await client.initialize()
        session = (await client.new_session(project, additionalDirectories=[str(extra)]))["sessionId"]
        fake.script([Reply(text="Noted.")])
        blocks = [
            {"type": "text", "text": "What do my notes say?", "annotations": {"priority": 1}},
            {"type": "resource_link", "uri": (project / "notes.md").as_uri(), "name": "notes.md"},
            {"type": "resource", "resource": {"uri": "file:///x.txt", "text": "an embedded file"}},
        ]
        assert await client.prompt(session, blocks) == {"stopReason": "end_turn"}
        assert client.text(session) == "Noted."
        body = str(fake.requests[-1].body["messages"][-1]["content"])
        assert "remember the milk" in body and "an embedded file" in body  # the blocks were read
        await client.request("session/set_mode", {"sessionId": session, "modeId": "plan"})
        listed = await client.request("session/list", {"cwd": str(project)})
        assert [entry["sessionId"] for entry in listed["sessions"]] == [session]
        await client.cancel(session)
        await client.request("session/close", {"sessionId": session})
        # stderr is one pipe: once the close is logged, every import before it has been read
        await client.wait_for(lambda: f"session {session} closed" in server.stderr)

        modules = imported(server)
        assert "hermes_acp.session.manager" in modules  # the -v lines are there
        assert SCHEMA not in modules

        # The reader declines a block type the protocol does not have; the schema refuses it.
        with pytest.raises(RequestError) as refused:
            await client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "video"}]})
        assert refused.value.code == -32602
        assert "prompt[0]: Input tag 'video'" in str(refused.value)
        await client.wait_for(lambda: SCHEMA in imported(server))


async def test_requests_only_the_schema_can_read_are_served_while_a_turn_streams(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    """Declined requests arriving together during a streaming turn (the first ones to need
    the schema) each get the schema's reading, and the turn streams to its end."""
    async with spawn_server(server_env(tmp_path, fake)) as server:
        client: AcpClient = server.sdk_client(dict(ZED_CAPABILITIES))
        await client.initialize()
        session = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="one two three four five six", chunk_size=3, chunk_delay=0.02)])
        turn = client.start_prompt(session, "count")
        await client.wait_for_update("agent_message_chunk", session)

        async def refused(params: dict[str, object]) -> RequestError:
            with pytest.raises(RequestError) as error:
                await client.request("session/prompt", params)
            return error.value

        # snake_case names: the SDK's models accept them, the readers leave them to it
        by_alias = client.request("session/set_mode", {"session_id": session, "mode_id": "plan"})
        bad_block = refused({"sessionId": session, "prompt": [{"type": "text", "text": 5}]})
        no_session = refused({"prompt": []})
        mode, block_error, session_error = await asyncio.gather(by_alias, bad_block, no_session)

        assert mode == {}
        assert (await client.wait_for_update("current_mode_update", session))["currentModeId"] == "plan"
        assert block_error.code == -32602 and "prompt[0].text.text" in str(block_error)
        assert session_error.code == -32602 and "sessionId" in str(session_error)
        assert await turn == {"stopReason": "end_turn"}
        assert client.text(session) == "one two three four five six"


async def test_a_second_hello_only_the_schema_can_read_gets_the_same_answer(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    """Once sessions may run, an `initialize` the plain reader declines (a capability this
    agent does not know) is read by the schema, which the server loads then, and answered
    as the first was."""
    async with spawn_server(server_env(tmp_path, fake, PYTHONVERBOSE="1")) as server:
        client: AcpClient = server.sdk_client(dict(ZED_CAPABILITIES))
        first = await client.initialize()
        await client.new_session(project)
        assert SCHEMA not in imported(server)
        hello = {"protocolVersion": 1, "clientCapabilities": {**ZED_CAPABILITIES, "someFutureCapability": {}}}
        second = await client.request("initialize", hello)
        assert second == first
        await client.wait_for(lambda: SCHEMA in imported(server))
