"""The spec's newer parts over the real server: logout, `$/cancel_request`, usage with the
prompt response, the boolean auto-compact option, `session/set_model`, messageId on replay."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.support.acp_harness import ZED_CAPABILITIES, AcpClient, ServerProcess, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.schema import validate
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Every turn is over the threshold: compaction runs whenever auto-compact is on.
COMPACT_EVERY_TURN = {"HERMES_ACP_COMPRESSION_THRESHOLD": "0.000001", "HERMES_ACP_COMPRESSION_KEEP_LAST": "2"}


SERVER_SETUP = ServerSetup(settings=COMPACT_EVERY_TURN)


async def test_logout_is_advertised_and_forgets_the_stored_keys(
    fake: FakeProvider, tmp_path: Path, client: AcpClient
) -> None:
    assert client.initialized["agentCapabilities"]["auth"] == {"logout": {}}
    env = server_env(tmp_path, fake)
    del env["OPENAI_API_KEY"]
    config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('provider = "openai"\nmodel = "gpt-4.1"\nopenai_api_key = "sk-stored"\n')
    async with connected(env) as (process, own):
        assert (await own.new_session(tmp_path))["sessionId"]
        result = await own.request("logout", {})
        assert result["_meta"]["hermes"] == {"removed": ["openai_api_key"], "keysStillInEnvironment": False}
        assert tomllib.loads(config.read_text()) == {"provider": "openai", "model": "gpt-4.1"}
        new = {"cwd": str(tmp_path), "mcpServers": []}
        await process.send({"jsonrpc": "2.0", "id": "after", "method": "session/new", "params": new})
        reply = await process.response_to("after")
        assert reply["error"]["code"] == -32000  # auth required: the key is gone
        assert "hermes-acp setup" in reply["error"]["message"]
        process.assert_clean()


async def test_cancel_request_stops_a_slow_request_with_32800(
    client: AcpClient, server: ServerProcess, tmp_path: Path
) -> None:
    # An MCP server that never answers holds session/new for up to 20 s.
    silent = {"name": "silent", "command": "sleep", "args": ["60"], "env": []}
    params = {"cwd": str(tmp_path), "mcpServers": [silent]}
    await server.send({"jsonrpc": "2.0", "id": "slow-new", "method": "session/new", "params": params})
    # Read after the request, so it is in flight (waiting for the server) when this arrives.
    await server.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "slow-new"}})
    reply = await server.response_to("slow-new")
    assert reply["error"]["code"] == -32800  # not a session made without the silent server
    # The connection still serves.
    assert (await client.new_session(tmp_path))["sessionId"]


async def test_cancel_request_on_a_prompt_ends_its_turn_cancelled(
    client: AcpClient, server: ServerProcess, fake: FakeProvider, tmp_path: Path
) -> None:
    session = (await client.new_session(tmp_path))["sessionId"]
    fake.script([Reply(text="slow answer", stall=30)])
    before = len(fake.requests)
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "take your time"}]}
    await server.send({"jsonrpc": "2.0", "id": 9001, "method": "session/prompt", "params": prompt})
    await client.wait_for(lambda: len(fake.requests) > before)  # the model is answering
    await server.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 9001}})
    reply = await server.response_to(9001)
    assert reply["result"]["stopReason"] == "cancelled"


async def test_the_usage_goes_in_meta_where_the_stable_schema_allows_it(
    client: AcpClient, server: ServerProcess, fake: FakeProvider, tmp_path: Path
) -> None:
    """The draft `usage` field fails the stable schema (the conformance kit's ACP-SCHEMA-002):
    it goes under `_meta.hermes.usage`, unless the client asks for the field."""
    session = (await client.new_session(tmp_path))["sessionId"]
    fake.script([Reply(text="one", usage=(1200, 300, 200))])
    params = {"sessionId": session, "prompt": [{"type": "text", "text": "first"}]}
    await server.send({"jsonrpc": "2.0", "id": "usage-in-meta", "method": "session/prompt", "params": params})
    result = (await server.response_to("usage-in-meta"))["result"]
    validate("PromptResponse", result)  # the stable schema
    assert "usage" not in result
    assert result["_meta"]["hermes"]["usage"]["totalTokens"] == 1500

    asking = {
        **ZED_CAPABILITIES,
        "_meta": {**ZED_CAPABILITIES.get("_meta", {}), "hermes": {"promptUsage": True}},
    }
    async with connected(server_env(tmp_path / "asking", fake, **COMPACT_EVERY_TURN), asking) as (own, other):
        sid = (await other.new_session(tmp_path))["sessionId"]
        fake.script([Reply(text="two", usage=(40, 2, 0))])
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "second"}]}
        await own.send({"jsonrpc": "2.0", "id": "usage-field", "method": "session/prompt", "params": params})
        result = (await own.response_to("usage-field"))["result"]
        assert result["usage"]["totalTokens"] == 42 and "_meta" not in result
        own.assert_clean()  # held to the draft schema, which has the field


async def test_the_prompt_response_carries_the_turns_usage(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    session = (await client.new_session(tmp_path))["sessionId"]
    await client.request(
        "session/set_config_option",
        {"sessionId": session, "configId": "auto_compact", "type": "boolean", "value": False},
    )
    fake.script([Reply(text="one", usage=(1200, 300, 200)), Reply(text="two", usage=(1500, 20, 1000))])
    await client.prompt(session, "first")
    await client.prompt(session, "second")
    first, second = client.prompt_usage[session]
    assert first == {
        "totalTokens": 1500,
        "inputTokens": 1200,
        "outputTokens": 300,
        "thoughtTokens": 0,
        "cachedReadTokens": 200,
        "cachedWriteTokens": 0,
    }
    assert second is not None and second["inputTokens"] == 1500 and second["cachedReadTokens"] == 1000
    # A slash command makes no model call and reports none.
    await client.prompt(session, "/cost")
    assert client.prompt_usage[session][-1] is None


async def test_auto_compact_is_a_boolean_option_that_stops_compaction(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    async def model_calls_for_three_prompts(auto_compact: bool) -> int:
        session = (await client.new_session(tmp_path))["sessionId"]
        result = await client.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "auto_compact", "type": "boolean", "value": auto_compact},
        )
        option = next(o for o in result["configOptions"] if o["id"] == "auto_compact")
        assert option == {**option, "type": "boolean", "currentValue": auto_compact}
        fake.script([Reply(text=f"reply {i}") for i in range(8)])
        before = len(fake.requests)
        for i in range(3):
            await client.prompt(session, f"prompt {i}")
        return len(fake.requests) - before

    assert await model_calls_for_three_prompts(False) == 3
    assert await model_calls_for_three_prompts(True) > 3  # summaries were asked for


async def test_session_set_model_still_switches_the_model(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    session = (await client.new_session(tmp_path))["sessionId"]
    assert (
        await client.request("session/set_model", {"sessionId": session, "modelId": "older-client-pick"})
        == {}
    )
    update = await client.wait_for_update("config_option_update", session)
    model = next(o for o in update["configOptions"] if o["id"] == "model")
    assert model["currentValue"] == "older-client-pick"
    fake.script([Reply(text="hi")])
    before = len(fake.requests)
    await client.prompt(session, "hello")
    assert fake.requests[before].body["model"] == "older-client-pick"


async def test_replayed_chunks_carry_one_message_id_per_message(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    session = (await client.new_session(tmp_path))["sessionId"]
    fake.script([Reply(text="first answer", reasoning="thinking it over"), Reply(text="second answer")])
    await client.prompt(session, "one")
    await client.prompt(session, "two")
    live = client.session_updates(session, "agent_thought_chunk")
    assert live and all(chunk.get("messageId") for chunk in live)
    mark = len(client.updates)
    await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []})
    replayed = [p["update"] for p in client.updates[mark:] if p["sessionId"] == session]
    chunks = [u for u in replayed if u["sessionUpdate"].endswith("_chunk")]
    assert {u["sessionUpdate"] for u in chunks} == {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
    }
    assert all(u.get("messageId") for u in chunks)
    ids = [u["messageId"] for u in chunks if u["sessionUpdate"] != "agent_thought_chunk"]
    assert len(set(ids)) == 4  # two prompts, two answers
