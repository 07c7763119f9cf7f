"""What the user sees when things fail: a retried answer, a failed turn reloaded, and no
update after a prompt's response."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.support.acp_harness import (
    ZED_CAPABILITIES,
    AcpClient,
    ServerProcess,
    connected,
    server_env,
)
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")


SERVER_SETUP = ServerSetup(settings={"HERMES_ACP_MAX_RETRIES": "1"})


def load_params(sid: str, project: Path) -> dict[str, Any]:
    return {"sessionId": sid, "cwd": str(project), "mcpServers": []}


def message_groups(client: AcpClient, sid: str) -> list[str]:
    """The answer's text per ACP messageId, in order."""
    groups: dict[str, str] = {}
    for update in client.session_updates(sid, "agent_message_chunk"):
        key = update.get("messageId") or ""
        groups[key] = groups.get(key, "") + update["content"]["text"]
    return list(groups.values())


async def test_a_retried_answer_is_a_new_message_and_the_dropped_text_is_marked(
    client: AcpClient, fake: FakeProvider, project: Path, session: str
) -> None:
    fake.script([Reply(text="partial answer", chunk_size=2, drop_after=5), Reply(text="B-ok")])

    assert await client.prompt(session, "answer me") == {"stopReason": "end_turn"}

    partial, answer = message_groups(client, session)
    assert "partial answer".startswith(partial) and partial
    assert answer == "B-ok"
    kinds = [
        (u["sessionUpdate"], u["content"]["text"])
        for u in client.session_updates(session)
        if u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk")
    ]
    notice = next(i for i, (kind, text) in enumerate(kinds) if "was discarded" in text)
    assert kinds[notice][0] == "agent_thought_chunk"
    shown_before = "".join(text for kind, text in kinds[:notice] if kind == "agent_message_chunk")
    assert shown_before == partial  # the marker sits between the dropped text and the answer

    client.updates.clear()
    await client.request("session/load", load_params(session, project))
    assert client.text(session) == "B-ok"  # what was kept is the retry's answer alone


async def test_a_retry_that_repeats_what_was_shown_stays_one_message(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    fake.script([Reply(text="same words", chunk_size=2, drop_after=3), Reply(text="same words")])
    assert await client.prompt(session, "answer me") == {"stopReason": "end_turn"}
    assert message_groups(client, session) == ["same words"]
    assert "discarded" not in client.text(session, "agent_thought_chunk")


async def test_a_failed_turn_shows_why_when_the_session_is_loaded_again(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    fake.script([Reply.server_error(), Reply.server_error()])
    sid = (await client.new_session(project))["sessionId"]
    assert await client.prompt(sid, "first question") == {"stopReason": "end_turn"}
    assert "The model provider failed" in client.text(sid)

    client.updates.clear()
    await client.request("session/load", load_params(sid, project))
    replayed = client.text(sid)
    assert "The model provider failed" in replayed and "500" in replayed
    assert client.text(sid, "user_message_chunk") == "first question"

    fake.script([Reply(text="Working now.")])
    assert await client.prompt(sid, "second question") == {"stopReason": "end_turn"}
    sent = str(fake.requests[-1].body["messages"])
    assert "first question" in sent and "provider failed" not in sent  # shown to the user, not the model


# -- no update after a prompt's response -------------------------------------------------------

ENDPOINT_MODELS = ["gpt-4.1", "gpt-5-mini", "o4-mini"]


@pytest_asyncio.fixture(loop_scope="module")
async def fresh(fake: FakeProvider, tmp_path: Path) -> AsyncIterator[tuple[ServerProcess, AcpClient]]:
    """A server of its own: its model catalog has not fetched the endpoint's list yet."""
    fake.models = list(ENDPOINT_MODELS)
    fake.hold_models()
    try:
        async with connected(server_env(tmp_path / "home", fake), ZED_CAPABILITIES) as (process, client):
            yield process, client
            process.assert_clean()
    finally:
        fake.release_models()
        fake.models = []
        fake.script([])


def after_response(server: ServerProcess, sid: str, request_id: int) -> list[str]:
    """The session's updates the server wrote after its response to `request_id`."""
    answered = next(
        i for i, m in enumerate(server.received) if "method" not in m and m.get("id") == request_id
    )
    return [
        m["params"]["update"]["sessionUpdate"]
        for m in server.received[answered + 1 :]
        if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
    ]


def last_prompt_response(server: ServerProcess) -> int:
    """The id of the last session/prompt response the server wrote."""
    return next(
        m["id"]
        for m in reversed(server.received)
        if "method" not in m and "stopReason" in m.get("result", {})
    )


def model_list_landed(server: ServerProcess, client: AcpClient, sid: str) -> bool:
    """The refresh is done: its update was sent, or the server says it holds it back."""
    return bool(client.session_updates(sid, "config_option_update")) or (
        "update held until its turn ends" in server.stderr
    )


async def write_while_asked(
    client: AcpClient, fake: FakeProvider, sid: str, path: str, while_asked: Callable[[], Awaitable[None]]
) -> None:
    """A turn that writes `path`; `while_asked` runs while its permission request waits."""

    async def answer(params: dict[str, Any]) -> str:
        await while_asked()
        return "allow_once"

    client.permission = answer
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": path, "content": "x"}, id="call_w")]),
            Reply(text="done"),
        ]
    )
    try:
        assert await client.prompt(sid, f"write {path}") == {"stopReason": "end_turn"}
    finally:
        client.permission = "allow_once"


async def test_a_model_list_landing_after_a_cancelled_prompt_waits_for_the_next_turn(
    fresh: tuple[ServerProcess, AcpClient], fake: FakeProvider, project: Path
) -> None:
    """acp-tck ACP-CANCEL-002: after a cancelled prompt's response, no update of its session."""
    server, client = fresh
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="slow " * 50, stall=30)])
    prompt = client.start_prompt(sid, "take your time")
    await asyncio.to_thread(fake.wait_for_requests, len(fake.requests) + 1)
    await client.cancel(sid)
    assert await prompt == {"stopReason": "cancelled"}
    cancelled_id = last_prompt_response(server)

    fake.release_models()  # the refresh session/new started lands now, after the response
    await client.wait_for(lambda: model_list_landed(server, client, sid))
    assert after_response(server, sid, cancelled_id) == []

    fake.script([Reply(text="next")])
    assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
    update = client.session_updates(sid, "config_option_update")[-1]
    model = next(o for o in update["configOptions"] if o["id"] == "model")
    assert set(ENDPOINT_MODELS) <= {v["value"] for v in model["options"]}
    last_id = last_prompt_response(server)
    assert after_response(server, sid, last_id) == []


async def test_a_model_list_landing_mid_turn_is_sent_before_the_prompt_response(
    fresh: tuple[ServerProcess, AcpClient], fake: FakeProvider, project: Path
) -> None:
    server, client = fresh
    sid = (await client.new_session(project))["sessionId"]

    async def land_the_model_list() -> None:
        fake.release_models()
        await client.wait_for(lambda: model_list_landed(server, client, sid))

    await write_while_asked(client, fake, sid, "a.txt", land_the_model_list)
    prompt_id = last_prompt_response(server)
    assert client.session_updates(sid, "config_option_update")
    assert after_response(server, sid, prompt_id) == []


# -- a model switch closes what it retires ------------------------------------------------------


async def test_switching_models_closes_the_retired_clients_connections(project: Path, tmp_path: Path) -> None:
    with FakeProvider() as own:  # its own: no other test's connections in the count
        env = server_env(tmp_path / "home", own, HERMES_ACP_MODELS="gpt-4.1,gpt-5-mini")
        async with connected(env, ZED_CAPABILITIES) as (server, client):
            sid = (await client.new_session(project))["sessionId"]
            # the model list was fetched: it follows the SDK's import, after session/new
            await asyncio.to_thread(own.wait_for_models_served, 1, 60)
            await asyncio.to_thread(own.wait_for_open_connections, 0)
            own.script([Reply(text="first")])
            assert await client.prompt(sid, "hi") == {"stopReason": "end_turn"}
            assert own.open_connections == 1  # the SDK keeps its connection for the next call

            await client.request(
                "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "gpt-5-mini"}
            )
            await asyncio.to_thread(own.wait_for_open_connections, 0)

            own.script([Reply(text="second")])
            assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
            assert own.requests[-1].body["model"] == "gpt-5-mini"
            assert own.open_connections == 1
            server.assert_clean()


async def test_a_model_switch_during_a_turn_closes_the_old_client_when_the_turn_ends(
    project: Path, tmp_path: Path
) -> None:
    with FakeProvider() as own:
        env = server_env(tmp_path / "home", own, HERMES_ACP_MODELS="gpt-4.1,gpt-5-mini")
        async with connected(env, ZED_CAPABILITIES) as (server, client):
            sid = (await client.new_session(project))["sessionId"]
            await asyncio.to_thread(own.wait_for_models_served, 1, 60)
            await asyncio.to_thread(own.wait_for_open_connections, 0)

            async def switch_now() -> None:
                await client.request(
                    "session/set_config_option",
                    {"sessionId": sid, "configId": "model", "value": "gpt-5-mini"},
                )
                assert own.open_connections == 1  # the running turn keeps its client

            await write_while_asked(client, own, sid, "a.txt", switch_now)
            assert own.requests[-1].body["model"] == "gpt-4.1"
            await asyncio.to_thread(own.wait_for_open_connections, 0)
            server.assert_clean()


async def test_a_mode_change_during_a_turn_is_announced_before_the_prompt_response(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]

    async def switch_mode() -> None:
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})

    await write_while_asked(client, fake, sid, "m.txt", switch_mode)
    prompt_id = last_prompt_response(server)
    assert client.session_updates(sid, "current_mode_update")[-1]["currentModeId"] == "accept_edits"
    assert after_response(server, sid, prompt_id) == []
