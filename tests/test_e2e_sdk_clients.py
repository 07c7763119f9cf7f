"""A session on chat completions, Responses or Anthropic streams its answer without the
provider SDKs: the requests go out with aiohttp (core/providers/http.py), and the first
prompt of a fresh process no longer waits for an SDK's import (0.3-1 s of CPU).

The server runs with PYTHONVERBOSE, so its stderr names every module it imports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.imports import imported

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("api_mode", ["chat_completions", "responses", "anthropic_messages"])
async def test_a_session_streams_without_the_provider_sdks(
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
        assert "aiohttp" in modules  # the -v lines are there, and HTTP went through aiohttp
        assert {"openai", "anthropic"} & modules == set()
