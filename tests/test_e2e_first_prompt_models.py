"""A cold process's first text-only prompt builds no pydantic model, end to end: the first
one built costs ~40 ms of CPU (pydantic's plugin scan, importlib.metadata, the schema),
and the settings, the session's rules and the tool list sent to the model need none
(core/tools/arg_schemas.py, core/config.py's tables). A tool call still validates its
arguments, and builds its model then.

The server runs with PYTHONVERBOSE: pydantic imports its plugin loader when it builds
its first model, so the loader's import marks the first model built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import ZED_CAPABILITIES, AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.imports import imported

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIRST_MODEL_BUILT = "pydantic.plugin._loader"


async def test_a_text_prompt_builds_no_model_and_a_tool_call_does(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    (project / "notes.md").write_text("remember the milk\n")
    async with spawn_server(server_env(tmp_path, fake, PYTHONVERBOSE="1")) as server:
        client: AcpClient = server.sdk_client(dict(ZED_CAPABILITIES))
        await client.initialize()
        session = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="Hello.")])
        assert await client.prompt(session, [{"type": "text", "text": "hi"}]) == {"stopReason": "end_turn"}
        assert client.text(session) == "Hello."
        tools = {tool["function"]["name"] for tool in fake.requests[-1].body["tools"]}
        assert {"read_file", "patch", "terminal", "todo"} <= tools  # the model was offered them
        await client.request("session/close", {"sessionId": session})
        # stderr is one pipe: once the close is logged, every import before it has been read
        await client.wait_for(lambda: f"session {session} closed" in server.stderr)
        modules = imported(server)
        assert "hermes_acp.session.manager" in modules  # the -v lines are there
        assert FIRST_MODEL_BUILT not in modules

        read = ToolCallSpec("read_file", {"path": "notes.md", "offset": 0})  # offset is 1-based
        fake.script([Reply(tool_calls=[read]), Reply(text="Done.")])
        session = (await client.new_session(project))["sessionId"]
        await client.prompt(session, [{"type": "text", "text": "read my notes"}])
        result = str(fake.requests[-1].body["messages"])
        assert "offset" in result and "remember the milk" not in result  # refused by the model's bounds
        await client.wait_for(lambda: FIRST_MODEL_BUILT in imported(server))
