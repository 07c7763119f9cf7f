"""The clarify tool over the real server: a form where the editor advertises elicitation,
the question as the turn's answer where it does not, and a cancel that withdraws it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, ZED_CAPABILITIES, AcpClient, ServerProcess
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

ASKING = {**ZED_CAPABILITIES, "elicitation": {"form": {}}}  # as Zed advertises it


SERVER_SETUP = ServerSetup(capabilities=ASKING)


def ask(question: str, choices: list[str] | None = None, call_id: str = "call_ask") -> Reply:
    arguments: dict[str, Any] = {"question": question}
    if choices:
        arguments["choices"] = choices
    return Reply(tool_calls=[ToolCallSpec("clarify", arguments, id=call_id)])


async def test_the_question_is_a_form_and_the_answer_reaches_the_model(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    client.elicitation = lambda params: {"action": "accept", "content": {"answer": "postgres"}}
    fake.script([ask("Which database?", ["sqlite", "postgres"]), Reply(text="postgres it is")])
    assert await client.prompt(session, "set up the database") == {"stopReason": "end_turn"}
    [form] = client.elicitations[-1:]
    assert form["sessionId"] == session and form["toolCallId"] == "call_ask" and form["mode"] == "form"
    assert form["message"] == "Which database?"
    assert form["requestedSchema"]["properties"]["answer"]["enum"] == ["sqlite", "postgres"]
    assert "The user answered: postgres" in str(fake.requests[-1].body["messages"][-1])
    assert client.text(session).endswith("postgres it is")


async def test_a_declined_question_lets_the_model_go_on(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    client.elicitation = {"action": "decline"}
    fake.script([ask("Tabs or spaces?"), Reply(text="spaces, then")])
    assert await client.prompt(session, "format it") == {"stopReason": "end_turn"}
    assert "free" not in str(client.elicitations[-1]["requestedSchema"])  # no choices: free text
    assert "declined" in str(fake.requests[-1].body["messages"][-1])


async def test_without_elicitation_the_question_ends_the_turn(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    client.capabilities = PLAIN_CAPABILITIES  # no elicitation advertised
    await client.initialize()
    session = (await client.new_session(project))["sessionId"]
    asked_before = len(client.elicitations)
    requests_before = len(fake.requests)
    fake.script(
        [ask("Which branch should I rebase on?", ["main", "develop"]), Reply(text="rebasing on develop")]
    )
    assert await client.prompt(session, "rebase my work") == {"stopReason": "end_turn"}
    assert len(client.elicitations) == asked_before  # never sent to a client that did not advertise it
    assert len(fake.requests) == requests_before + 1  # the turn ended with the question
    assert client.text(session).endswith("Which branch should I rebase on?\n\n- main\n- develop")
    # The next prompt is the answer, read after the question.
    assert await client.prompt(session, "develop") == {"stopReason": "end_turn"}
    messages = fake.requests[-1].body["messages"]
    assert messages[-2]["role"] == "assistant" and "Which branch" in messages[-2]["content"]
    assert messages[-1] == {"role": "user", "content": "develop"}


async def test_a_cancel_withdraws_the_open_question(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    opened = asyncio.Event()
    never = asyncio.Event()

    async def undecided(params: dict[str, Any]) -> dict[str, Any]:
        opened.set()
        await never.wait()
        return {"action": "cancel"}

    client.elicitation = undecided
    fake.script([ask("Shall I delete the cache?", ["yes", "no"])])
    withdrawn_before = len(client.withdrawn)
    prompt = client.start_prompt(session, "clean up")
    await asyncio.wait_for(opened.wait(), 30)
    await client.cancel(session)
    assert await asyncio.wait_for(prompt, 30) == {"stopReason": "cancelled"}
    await client.wait_for(lambda: len(client.withdrawn) > withdrawn_before)
    never.set()
    request_ids = [m["id"] for m in client.server.received if m.get("method") == "elicitation/create"]
    assert client.withdrawn[-1] == request_ids[-1]
