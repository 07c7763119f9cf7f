"""The openai SDK is loaded as its client alone: a session on chat completions or
Responses streams its answers without the package's re-exports of every type and
resource (core/providers/openai_client.py: ~470 ms and ~11 MB a process does not pay).

The server runs with PYTHONVERBOSE, so its stderr names every module it imports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.imports import imported

pytestmark = pytest.mark.asyncio

# `openai/__init__.py` imports these; the client alone does not
WHOLE_PACKAGE = ("openai.lib.azure", "openai.resources.beta", "openai.types.beta")


@pytest.mark.parametrize("api_mode", ["chat_completions", "responses"])
async def test_a_session_streams_with_the_openai_client_alone(
    api_mode: str, fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env = server_env(tmp_path, fake, PYTHONVERBOSE="1", HERMES_ACP_API_MODE=api_mode)
    async with spawn_server(env) as server:
        client: AcpClient = server.sdk_client()
        await client.initialize()
        session = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="Hello from the model.")])
        assert await client.prompt(session, "hi") == {"stopReason": "end_turn"}
        assert client.text(session) == "Hello from the model."
        await client.request("session/close", {"sessionId": session})
        # stderr is one pipe: once the close is logged, every import before it has been read
        await client.wait_for(lambda: f"session {session} closed" in server.stderr)

        modules = imported(server)
        assert "openai._client" in modules  # the -v lines are there, and the SDK did the call
        assert [name for name in WHOLE_PACKAGE if name in modules] == []
