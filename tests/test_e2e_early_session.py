"""A `session/new` sent with the first `initialize` is answered before the server exists
(hermes_acp/startup/early_session.py), with the server's own answer, and the session it
names is built before anything else is served: what a client sends the instant the
answer arrives finds it whole, another process can resume it, and a build that fails
behind the answer is the next prompt's error. Anything unusual is still the server's."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import ServerProcess, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.server_setup import write_config

pytestmark = pytest.mark.asyncio

HELLO: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
BOOLEAN_HELLO: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {"session": {"configOptions": {"boolean": {}}}},
}
EARLY = "session/new answered ahead of the server"


def message(request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def new_params(project: Path, **extra: Any) -> dict[str, Any]:
    return {"cwd": str(project), "mcpServers": [], **extra}


async def hello_and_new(
    process: ServerProcess, project: Path, hello: dict[str, Any] = HELLO, **extra: Any
) -> dict[str, Any]:
    """`initialize` and `session/new` in one write, as Zed sends them; the session/new response."""
    await process.send_together(
        message(0, "initialize", hello), message(1, "session/new", new_params(project, **extra))
    )
    assert "result" in await process.response_to(0)
    return await process.response_to(1)


def updates(process: ServerProcess, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in process.received
        if m.get("method") == "session/update"
        and m["params"]["sessionId"] == session_id
        and m["params"]["update"]["sessionUpdate"] == kind
    ]


def cache_models(env: dict[str, str], endpoint: str, models: list[str]) -> None:
    """The model list an earlier run kept for the endpoint (core/providers/model_list.py)."""
    cache = Path(env["HERMES_ACP_HOME"]) / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    entry = {"models": models, "fetched_at": time.time()}
    (cache / "model_lists.json").write_text(json.dumps({endpoint: entry}))


SETTINGS: dict[str, dict[str, str]] = {
    "chat": {},
    "responses": {"HERMES_ACP_MODEL": "gpt-5", "HERMES_ACP_API_MODE": "responses"},
    "anthropic": {"HERMES_ACP_PROVIDER": "anthropic", "HERMES_ACP_MODEL": "claude-sonnet-4"},
    "model list and effort": {"HERMES_ACP_MODELS": "o3,gpt-4.1-mini", "HERMES_ACP_REASONING_EFFORT": "high"},
    "plan mode, no auto-compact": {"HERMES_ACP_DEFAULT_MODE": "plan", "HERMES_ACP_AUTO_COMPACT": "false"},
}


@pytest.mark.parametrize("hello", [HELLO, BOOLEAN_HELLO], ids=["select options", "boolean options"])
@pytest.mark.parametrize("name", list(SETTINGS))
async def test_the_early_answer_is_the_servers_answer(
    fake: FakeProvider, tmp_path: Path, name: str, hello: dict[str, Any]
) -> None:
    """The same settings, the same hello: one process answers session/new early, the
    other (the same request with a `_meta`, which the early path declines) from the server."""
    project = tmp_path / "project"
    project.mkdir()
    answers = []
    for run, extra in (("early", {}), ("server", {"_meta": {}})):
        env = server_env(tmp_path / run, fake, **SETTINGS[name])
        provider = env.get("HERMES_ACP_PROVIDER", "openai")
        endpoint = f"{provider}||{env['OPENAI_BASE_URL']}|{env['ANTHROPIC_BASE_URL']}|"
        cache_models(env, endpoint, ["listed-model-a", "listed-model-b"])
        async with spawn_server(env) as process:
            answer = await hello_and_new(process, project, hello, **extra)
            await process.close_stdin()
            assert await process.wait() == 0
        assert (EARLY in process.stderr) == (run == "early"), process.stderr[-2000:]
        result = answer["result"]
        assert len(result.pop("sessionId")) == 32
        answers.append(result)
    early, served = answers
    assert early == served
    models = next(o for o in served["configOptions"] if o["id"] == "model")["options"]
    assert {"listed-model-a", "listed-model-b"} <= {m["value"] for m in models}  # the cache was read


async def test_a_prompt_sent_the_instant_the_early_answer_arrives_streams(
    fake: FakeProvider, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    fake.script([Reply(text="Hello from the model.")])
    async with spawn_server(server_env(tmp_path, fake)) as process:
        answer = await hello_and_new(process, project)
        sid = answer["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        await process.send_together(
            message(2, "session/set_mode", {"sessionId": sid, "modeId": "plan"}),
            message(3, "session/prompt", prompt),
        )
        assert (await process.response_to(2))["result"] == {}
        assert (await process.response_to(3))["result"]["stopReason"] == "end_turn"
        text = "".join(u["content"]["text"] for u in updates(process, sid, "agent_message_chunk"))
        assert text == "Hello from the model."
        # the mode set before the first prompt holds for it: plan mode's read-only tools
        sent_tools = {tool["function"]["name"] for tool in fake.requests[-1].body["tools"]}
        assert "write_file" not in sent_tools and "read_file" in sent_tools
        assert [u["currentModeId"] for u in updates(process, sid, "current_mode_update")] == ["plan"]
        # the commands menu still follows the answer
        order = [
            m.get("id") if "method" not in m else m["params"]["update"]["sessionUpdate"]
            for m in process.received
            if "method" not in m or m.get("method") == "session/update"
        ]
        assert order.index(1) < order.index("available_commands_update")
    assert EARLY in process.stderr


async def test_a_session_answered_early_and_left_at_once_is_resumed_by_another_process(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """acpx's `sessions new`: the client takes the id and closes the input; the session
    exists for the next process all the same."""
    project = tmp_path / "project"
    project.mkdir()
    env = server_env(tmp_path, fake)
    async with spawn_server(env) as first:
        sid = (await hello_and_new(first, project))["result"]["sessionId"]
        await first.close_stdin()
        assert await first.wait() == 0
    assert EARLY in first.stderr
    async with spawn_server(env) as later:
        await later.request(0, "initialize", HELLO)
        resumed = await later.request(1, "session/resume", {"sessionId": sid, **new_params(project)})
        assert resumed["result"]["modes"]["currentModeId"] == "ask"
        fake.script([Reply(text="resumed")])
        reply = await later.request(
            2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        assert reply["result"]["stopReason"] == "end_turn"


async def test_a_build_that_fails_after_the_early_answer_is_the_prompts_error(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """The session store cannot be opened (its file is a directory): session/new is
    answered from the settings, and the prompt that follows gets the store's error."""
    project = tmp_path / "project"
    project.mkdir()
    env = server_env(tmp_path, fake)
    (Path(env["HERMES_ACP_HOME"]) / "sessions.db").mkdir(parents=True)
    asked_before = len(fake.requests)
    async with spawn_server(env) as process:
        sid = (await hello_and_new(process, project))["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        error = (await process.request(2, "session/prompt", prompt))["error"]
        assert error["code"] == -32603
        assert error["message"].startswith(f"session {sid} could not be started: ")
        assert "unable to open database file" in error["message"]
        assert len(fake.requests) == asked_before  # no turn ran on half a session
        # reported once; the session is then unknown, as any session that never opened
        assert (await process.request(3, "session/prompt", prompt))["error"]["code"] == -32002
    assert EARLY in process.stderr


def mcp_entry() -> dict[str, Any]:
    return {"name": "gone", "command": "/nonexistent/mcp-server", "args": [], "env": []}


DECLINED: dict[str, Any] = {
    "MCP servers": ({}, None, lambda project: {"mcpServers": [mcp_entry()]}),
    "a relative cwd": ({}, None, lambda project: {"cwd": "project"}),
    "a cwd that is not there": ({}, None, lambda project: {"cwd": str(project / "gone")}),
    "no API key": ({"OPENAI_API_KEY": ""}, None, lambda project: {}),
    "a table in config.toml": ({}, '[context_windows]\n"gpt-4.1" = 50000\n', lambda project: {}),
}


@pytest.mark.parametrize("case", list(DECLINED))
async def test_what_the_early_path_declines_the_server_answers_as_before(
    fake: FakeProvider, tmp_path: Path, case: str
) -> None:
    """Each request as the first after initialize (declined) and as a later one (which
    the early path never sees): the same answer."""
    settings, config, change = DECLINED[case]
    project = tmp_path / "project"
    project.mkdir()
    env = server_env(tmp_path, fake, **settings)
    if config is not None:
        write_config(env, config)
    params = {**new_params(project), **change(project)}
    async with spawn_server(env) as process:
        await process.send_together(message(0, "initialize", HELLO), message(1, "session/new", params))
        first = await process.response_to(1)
        later = await process.request(2, "session/new", params)
    assert EARLY not in process.stderr
    for answer in (first, later):
        answer.pop("id")
        if "result" in answer:
            answer["result"].pop("sessionId")
    assert first == later


async def test_a_cancel_sent_with_the_first_prompt_cancels_its_turn(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """Both arrive while the early session may still be building: the prompt's turn
    starts first (it came first) and the cancel ends it."""
    project = tmp_path / "project"
    project.mkdir()
    fake.script([Reply(text="never finished", hold_after_first_text=True)])
    async with spawn_server(server_env(tmp_path, fake)) as process:
        sid = (await hello_and_new(process, project))["result"]["sessionId"]
        await process.send_together(
            message(2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}},
        )
        assert (await process.response_to(2))["result"]["stopReason"] == "cancelled"
        fake.release_stream()
    assert EARLY in process.stderr
