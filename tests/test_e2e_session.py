"""session/new, modes and config options, end to end."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp.exceptions import RequestError

from tests.support.acp_harness import SLASH_COMMANDS, AcpClient, ServerProcess, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENDPOINT_MODELS = ["fake-small", "fake-large", "o3"]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        provider.models = list(ENDPOINT_MODELS)
        yield provider


SERVER_SETUP = ServerSetup(settings={"HERMES_ACP_MODELS": "configured-one,configured-two"})


def option(options: list[dict], option_id: str) -> dict:
    return next(o for o in options if o["id"] == option_id)


def by_category(options: list[dict]) -> dict[str | None, dict]:
    return {o.get("category"): o for o in options}


async def test_new_session_answers_modes_and_config_options(client: AcpClient, project: Path) -> None:
    session = await client.new_session(project)
    assert session["sessionId"]
    modes = session["modes"]
    assert modes["currentModeId"] == "ask"
    assert [m["id"] for m in modes["availableModes"]] == ["ask", "accept_edits", "plan", "auto", "yolo"]
    assert all(m["name"] and m["description"] for m in modes["availableModes"])

    options = by_category(session["configOptions"])
    # gpt-4.1 takes no reasoning effort; Zed takes boolean options, so auto-compact is one
    assert [o["id"] for o in session["configOptions"]] == ["mode", "model", "auto_compact"]
    assert options["mode"]["currentValue"] == "ask"
    assert [o["value"] for o in options["mode"]["options"]] == ["ask", "accept_edits", "plan", "auto", "yolo"]
    model = options["model"]
    assert model["currentValue"] == "gpt-4.1"
    offered = [o["value"] for o in model["options"]]
    assert offered[:3] == ["gpt-4.1", "configured-one", "configured-two"]


async def test_commands_and_the_endpoint_model_list_follow_the_response(
    server: ServerProcess, client: AcpClient, project: Path
) -> None:
    session = await client.new_session(project)
    sid = session["sessionId"]
    commands = await client.wait_for_update("available_commands_update", sid)
    names = {c["name"] for c in commands["availableCommands"]}
    assert names == set(SLASH_COMMANDS)
    # the client must know the session id before any update for it arrives
    response_at = next(
        i for i, m in enumerate(server.received) if m.get("result", {}).get("sessionId") == sid
    )
    first_update_at = next(
        i for i, m in enumerate(server.received) if m.get("params", {}).get("sessionId") == sid
    )
    assert response_at < first_update_at

    # the endpoint's list arrives in the background: in the response if already known,
    # otherwise in a config_option_update (session/new never waits for it)
    offered = models_of(session["configOptions"])
    if not set(ENDPOINT_MODELS) <= set(offered):
        update = await client.wait_for_update("config_option_update", sid)
        offered = models_of(update["configOptions"])
    assert set(ENDPOINT_MODELS) <= set(offered)
    assert offered[0] == "gpt-4.1"
    later = await client.new_session(project)
    assert set(ENDPOINT_MODELS) <= set(models_of(later["configOptions"]))


def models_of(options: list[dict]) -> list[str]:
    return [o["value"] for o in option(options, "model")["options"]]


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("relative/dir", "must be an absolute path"),
        ("/definitely/not/here", "must be an existing directory"),
    ],
)
async def test_new_session_rejects_bad_cwd(client: AcpClient, cwd: str, expected: str) -> None:
    with pytest.raises(RequestError) as caught:
        await client.new_session(cwd)
    assert caught.value.code == -32602
    assert str(caught.value).startswith("cwd ")
    assert expected in str(caught.value)


async def test_new_session_rejects_a_file_as_cwd(client: AcpClient, project: Path) -> None:
    file = project / "file.txt"
    file.write_text("x")
    with pytest.raises(RequestError) as caught:
        await client.new_session(file)
    assert caught.value.code == -32602
    assert "is not a directory" in str(caught.value)


async def test_additional_directories_are_checked_like_cwd(client: AcpClient, project: Path) -> None:
    other = project.parent / "other"
    other.mkdir()
    for bad, expected in (("rel", "absolute"), (str(other / "missing"), "existing directory")):
        with pytest.raises(RequestError) as caught:
            await client.new_session(project, additionalDirectories=[str(other), bad])
        assert caught.value.code == -32602
        assert "additionalDirectories[1]" in str(caught.value)
        assert expected in str(caught.value)
    session = await client.new_session(project, additionalDirectories=[str(other)])
    assert session["sessionId"]


async def test_mcp_servers_that_cannot_be_used_are_reported_and_the_session_works(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    """Zed sends the user's MCP servers; one that cannot start or be reached is left out
    and named once in the conversation, a kind we do not speak is only logged."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    servers = [
        {
            "name": "files",
            "command": "/nonexistent/mcp-files",
            "args": ["--root", "/"],
            "env": [{"name": "A", "value": "1"}],
        },
        {
            "type": "http",
            "name": "remote",
            "url": f"http://127.0.0.1:{closed_port}/mcp",
            "headers": [{"name": "X", "value": "y"}],
        },
        {"type": "acp", "name": "bridge", "serverId": "in-editor"},
    ]
    session = await client.request("session/new", {"cwd": str(project), "mcpServers": servers})
    sid = session["sessionId"]
    note = await client.wait_for(lambda: client.text(sid))
    assert note.startswith("**Some MCP servers are not available in this session:**")
    assert "MCP server 'files': cannot start it" in note
    assert "MCP server 'remote'" in note
    assert "bridge" not in note
    assert await client.wait_for(
        lambda: "MCP server 'bridge': transport 'acp' is not supported" in server.stderr
    )

    fake.script([Reply(text="Still here.")])
    assert (await client.prompt(sid, "hello"))["stopReason"] == "end_turn"
    assert client.text(sid).endswith("Still here.")
    assert client.text(sid).count("MCP server 'files'") == 1


async def test_how_long_a_session_waits_for_mcp_servers_is_a_setting(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """10 s by default; a slow machine or an `npx` server that downloads itself needs more,
    an impatient user less. A server still silent then is left out and named."""
    home = tmp_path / "home"
    env = server_env(home, fake, HERMES_ACP_MCP_CONNECT_TIMEOUT="1.5")
    silent = {"name": "silent", "command": "sleep", "args": ["60"], "env": []}
    async with connected(env) as (_, client):
        session = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": [silent]})
        note = await client.wait_for(lambda: client.text(session["sessionId"]))
    assert "MCP server 'silent': did not connect within 1.5 s" in note


async def test_set_mode_round_trip(client: AcpClient, project: Path) -> None:
    sid = (await client.new_session(project))["sessionId"]
    assert await client.request("session/set_mode", {"sessionId": sid, "modeId": "plan"}) == {}
    mode = await client.wait_for_update("current_mode_update", sid)
    assert mode["currentModeId"] == "plan"
    config = await client.wait_for(
        lambda: [
            u
            for u in client.session_updates(sid, "config_option_update")
            if option(u["configOptions"], "mode")["currentValue"] == "plan"
        ]
    )
    assert config
    with pytest.raises(RequestError) as caught:
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "reckless"})
    assert caught.value.code == -32602
    assert "modeId" in str(caught.value) and "'yolo'" in str(caught.value)


async def test_set_config_option_answers_the_complete_list(client: AcpClient, project: Path) -> None:
    sid = (await client.new_session(project))["sessionId"]
    result = await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "accept_edits"}
    )
    options = by_category(result["configOptions"])
    assert set(options) >= {"mode", "model"}
    assert options["mode"]["currentValue"] == "accept_edits"
    assert (await client.wait_for_update("current_mode_update", sid))["currentModeId"] == "accept_edits"

    result = await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "configured-two"}
    )
    assert by_category(result["configOptions"])["model"]["currentValue"] == "configured-two"
    assert by_category(result["configOptions"])["mode"]["currentValue"] == "accept_edits"


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"configId": "temperature", "value": "hot"}, "unknown configId 'temperature'"),
        ({"configId": "mode", "value": "reckless"}, "unknown value 'reckless'"),
        ({"configId": "model", "value": "not-offered"}, "unknown value 'not-offered'"),
        ({"configId": "reasoning_effort", "value": "high"}, "unknown configId 'reasoning_effort'"),
        ({"configId": "mode", "type": "boolean", "value": True}, "must be a string"),
        ({"configId": "mode"}, "value"),
    ],
)
async def test_set_config_option_validates(
    client: AcpClient, project: Path, params: dict, fragment: str
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    with pytest.raises(RequestError) as caught:
        await client.request("session/set_config_option", {"sessionId": sid, **params})
    assert caught.value.code == -32602
    assert fragment in str(caught.value)


async def test_reasoning_effort_is_offered_only_for_models_that_take_it(
    client: AcpClient, project: Path
) -> None:
    session = await client.new_session(project)
    sid = session["sessionId"]
    if "o3" not in models_of(session["configOptions"]):  # the endpoint's list, not yet fetched
        await client.wait_for_update("config_option_update", sid)
    result = await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "o3"}
    )
    effort = by_category(result["configOptions"])["thought_level"]
    assert effort["id"] == "reasoning_effort"
    assert [o["value"] for o in effort["options"]] == ["default", "low", "medium", "high"]
    result = await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "reasoning_effort", "value": "high"}
    )
    assert by_category(result["configOptions"])["thought_level"]["currentValue"] == "high"
    result = await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "gpt-4.1"}
    )
    assert "thought_level" not in by_category(result["configOptions"])


async def test_a_new_model_is_used_for_the_next_prompt(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    await client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "configured-one"}
    )
    fake.script([Reply(text="from the other model")])
    before = len(fake.requests)
    assert await client.prompt(sid, "hello") == {"stopReason": "end_turn"}
    assert fake.requests[before].body["model"] == "configured-one"


async def test_unknown_session_is_32002(client: AcpClient) -> None:
    for method, params in (
        ("session/set_mode", {"modeId": "plan"}),
        ("session/set_config_option", {"configId": "mode", "value": "plan"}),
        ("session/prompt", {"prompt": [{"type": "text", "text": "hi"}]}),
    ):
        with pytest.raises(RequestError) as caught:
            await client.request(method, {"sessionId": "no-such-session", **params})
        assert caught.value.code == -32002, method
        assert "no-such-session" in str(caught.value)
