"""initialize and authenticate, end to end against the real server process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_acp import __version__
from tests.support.acp_harness import (
    FIXTURES,
    NO_CAPABILITIES,
    ServerProcess,
    connected,
    server_env,
    spawn_server,
)
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")


SERVER_SETUP = ServerSetup(sdk_client=False)


@pytest.fixture(autouse=True)
def _no_violations(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "server" in request.fixturenames:
        request.getfixturevalue("server").assert_clean()


async def initialize(server: ServerProcess, request_id: str, capabilities: dict) -> dict:
    params = {"protocolVersion": 1, "clientCapabilities": capabilities}
    reply = await server.request(request_id, "initialize", params)
    return reply["result"]


async def test_zed_initialize_payload(server: ServerProcess) -> None:
    line = (FIXTURES / "zed-initialize.json").read_bytes().strip()
    await server.send_line(line)
    reply = await server.next_message()
    assert reply["id"] == json.loads(line)["id"]
    result = reply["result"]
    assert result["protocolVersion"] == 1
    assert result["agentInfo"] == {"name": "hermes-acp", "title": "Hermes", "version": __version__}
    caps = result["agentCapabilities"]
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": True, "sse": True}
    methods = {method["id"]: method for method in result["authMethods"]}
    assert set(methods) == {"env", "setup"}
    assert "type" not in methods["env"]  # the agent method: the client calls authenticate
    assert "OPENAI_API_KEY" in methods["env"]["description"]
    assert methods["setup"]["type"] == "terminal"
    assert methods["setup"]["args"] == ["setup"]


async def test_a_client_without_terminal_auth_is_offered_only_the_agent_method(server: ServerProcess) -> None:
    for capabilities in (NO_CAPABILITIES, {"auth": {"terminal": False}}, {"terminal": True}):
        result = await initialize(server, f"caps-{capabilities}", capabilities)
        assert [m["id"] for m in result["authMethods"]] == ["env"]
        assert all(m.get("type") != "terminal" for m in result["authMethods"])


async def test_protocol_version_must_be_an_integer(server: ServerProcess) -> None:
    for bad in ("2024-11-05", "1", True, None, 1.5):
        reply = await server.request(
            f"bad-{bad}", "initialize", {"protocolVersion": bad, "clientCapabilities": {}}
        )
        error = reply["error"]
        assert error["code"] == -32602
        assert "protocolVersion" in error["message"]
        assert error["data"]["fields"] == ["protocolVersion"]
    reply = await server.request("missing", "initialize", {"clientCapabilities": {}})
    assert reply["error"]["code"] == -32602
    assert "protocolVersion" in reply["error"]["message"]


async def test_any_integer_protocol_version_is_answered_with_1(server: ServerProcess) -> None:
    for version in (0, 1, 2, 7):
        result = await initialize(server, f"v{version}", {})
        assert result["protocolVersion"] == 1


async def test_authenticate_checks_the_method_id(server: ServerProcess) -> None:
    await initialize(server, "auth-init", {})
    reply = await server.request("auth-bad", "authenticate", {"methodId": "oauth"})
    assert reply["error"]["code"] == -32602
    assert "'env'" in reply["error"]["message"]
    assert reply["error"]["data"]["valid"] == ["env"]
    # the terminal method is not valid for a client that was not offered it
    reply = await server.request("auth-setup", "authenticate", {"methodId": "setup"})
    assert reply["error"]["code"] == -32602
    reply = await server.request("auth-env", "authenticate", {"methodId": "env"})
    assert reply["result"] == {}


async def test_without_credentials_auth_is_required_until_a_key_is_configured(
    fake: FakeProvider, tmp_path: Path
) -> None:
    env = server_env(tmp_path, None)
    async with spawn_server(env) as process:
        await initialize(process, "i", {"auth": {"terminal": True}})
        reply = await process.request("a", "authenticate", {"methodId": "env"})
        assert reply["error"]["code"] == -32000
        assert "hermes-acp setup" in reply["error"]["message"]
        reply = await process.request("n", "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert reply["error"]["code"] == -32000
        assert "OPENAI_API_KEY" in reply["error"]["message"]

        # what `hermes-acp setup` would write: authenticate re-reads it
        config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f'openai_api_key = "k"\nopenai_base_url = "{fake.openai_base_url}"\n')
        reply = await process.request("a2", "authenticate", {"methodId": "setup"})
        assert reply["result"] == {}
        reply = await process.request("n2", "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert reply["result"]["sessionId"]


async def test_a_client_offering_nothing_gets_a_local_workspace(fake: FakeProvider, tmp_path: Path) -> None:
    """No fs, no terminal: the agent's write lands on disk without any fs/* call."""
    project = tmp_path / "project"
    project.mkdir()
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "hello.txt", "content": "hi there\n"})]),
            Reply(text="Wrote it."),
        ]
    )
    async with connected(server_env(tmp_path, fake), NO_CAPABILITIES) as (_, client):
        session = await client.new_session(project)
        result = await client.prompt(session["sessionId"], "write hello.txt")
        assert result == {"stopReason": "end_turn"}
        assert (project / "hello.txt").read_text() == "hi there\n"
        assert not [m for m in client.methods_called() if m.startswith(("fs/", "terminal/"))]
        assert client.permission_requests  # ask mode: the write still asked first
        assert "Wrote it." in client.text()


async def test_start_up_imports_nothing_heavy() -> None:
    """The agent loop, the store and the provider SDKs load after initialize, in the
    background, so start-up costs about what the ACP SDK alone costs."""
    probe = (
        "import sys, hermes_acp.cli, hermes_acp.server\n"
        "heavy = ['hermes_core.agent', 'hermes_core.store', 'sqlite3', 'openai', 'anthropic', 'httpx',\n"
        "         'hermes_core.tools']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    command = [sys.executable, "-c", probe]
    result = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
