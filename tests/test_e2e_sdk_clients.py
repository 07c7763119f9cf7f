"""The provider SDKs are loaded as their clients alone: a session on chat completions,
Responses or Anthropic streams its answers without the package's re-exports of every type
and resource (core/providers/openai_client.py, anthropic_client.py: hundreds of ms and tens
of MB a process does not pay).

The server runs with PYTHONVERBOSE, so its stderr names every module it imports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.imports import imported

pytestmark = pytest.mark.asyncio

# What each package's `__init__` imports and its client alone does not
CLIENTS = {
    "chat_completions": (
        "openai._client",
        ("openai.lib.azure", "openai.resources.beta", "openai.types.beta"),
    ),
    "responses": ("openai._client", ("openai.lib.azure", "openai.resources.beta", "openai.types.beta")),
    "anthropic_messages": (
        "anthropic._client",
        ("anthropic.lib.vertex", "anthropic.lib.bedrock", "anthropic.lib.foundry"),
    ),
}


@pytest.mark.parametrize("api_mode", list(CLIENTS))
async def test_a_session_streams_with_the_sdk_client_alone(
    api_mode: str, fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    client_module, whole_package = CLIENTS[api_mode]
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
        assert client_module in modules  # the -v lines are there, and the SDK did the call
        assert [name for name in whole_package if name in modules] == []
