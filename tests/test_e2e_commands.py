"""Slash commands: answered without a model call where none is needed."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

PRICES = '[prices."gpt-4.1"]\ninput = 2.0\noutput = 8.0\n'


SERVER_SETUP = ServerSetup(settings={"HERMES_ACP_COMPRESSION_KEEP_LAST": "2"}, config_toml=PRICES)


@pytest_asyncio.fixture(loop_scope="module")
async def session(client: AcpClient, tmp_path: Path) -> str:
    return (await client.new_session(tmp_path))["sessionId"]


async def say(client: AcpClient, fake: FakeProvider, session: str, text: str) -> str:
    """Run a prompt that must not reach the model; the answer's text."""
    before_requests = len(fake.requests)
    before = len(client.session_updates(session, "agent_message_chunk"))
    assert await client.prompt(session, text) == {"stopReason": "end_turn"}
    assert len(fake.requests) == before_requests, f"{text} called the model"
    return "".join(
        u["content"]["text"] for u in client.session_updates(session, "agent_message_chunk")[before:]
    )


async def test_help(client: AcpClient, fake: FakeProvider, session: str) -> None:
    text = await say(client, fake, session, "/help")
    for command in ("/mode", "/model", "/compact", "/clear", "/tools", "/context", "/cost"):
        assert command in text
    assert "accept_edits" in text


async def test_mode(client: AcpClient, fake: FakeProvider, session: str) -> None:
    text = await say(client, fake, session, "/mode plan")
    assert "plan" in text
    assert client.session_updates(session, "current_mode_update")[-1]["currentModeId"] == "plan"
    config = client.session_updates(session, "config_option_update")[-1]["configOptions"]
    assert next(o for o in config if o["id"] == "mode")["currentValue"] == "plan"
    text = await say(client, fake, session, "/mode reckless")
    assert "no mode `reckless`" in text
    assert client.session_updates(session, "current_mode_update")[-1]["currentModeId"] == "plan"


async def test_tools_follow_the_mode(client: AcpClient, fake: FakeProvider, session: str) -> None:
    text = await say(client, fake, session, "/tools")
    assert "`write_file`" in text and "`terminal`" in text and "`read_file`" in text
    await say(client, fake, session, "/mode plan")
    text = await say(client, fake, session, "/tools")
    assert "`read_file`" in text and "`write_file`" not in text


async def test_model_switches_the_next_turn(client: AcpClient, fake: FakeProvider, session: str) -> None:
    text = await say(client, fake, session, "/model my-custom-model")
    assert "my-custom-model" in text
    config = client.session_updates(session, "config_option_update")[-1]["configOptions"]
    model = next(o for o in config if o["id"] == "model")
    assert model["currentValue"] == "my-custom-model"
    assert "my-custom-model" in [o["value"] for o in model["options"]]
    fake.script([Reply(text="hi")])
    before = len(fake.requests)
    await client.prompt(session, "hello")
    assert fake.requests[before].body["model"] == "my-custom-model"


async def test_context_and_cost(client: AcpClient, fake: FakeProvider, session: str) -> None:
    fake.script([Reply(text="an answer", usage=(1200, 300, 200))])
    await client.prompt(session, "hello")
    context = await say(client, fake, session, "/context")
    assert "Context:" in context and "tokens in use" in context and "2 messages" in context
    cost = await say(client, fake, session, "/cost")
    assert "1,200 in" in cost and "300 out" in cost and "200 from the prompt cache" in cost
    assert "$" in cost


async def test_clear_starts_an_empty_history(client: AcpClient, fake: FakeProvider, session: str) -> None:
    fake.script([Reply(text="first"), Reply(text="second")])
    await client.prompt(session, "remember the word pineapple")
    text = await say(client, fake, session, "/clear")
    assert "cleared" in text.lower()
    before = len(fake.requests)
    await client.prompt(session, "what word?")
    messages = fake.requests[before].body["messages"]
    assert "pineapple" not in str(messages)


async def test_compact_summarises_with_the_model(
    client: AcpClient, fake: FakeProvider, session: str, tmp_path: Path
) -> None:
    fake.script([Reply(text=f"answer {i}") for i in range(3)])
    for i in range(3):
        await client.prompt(session, f"question {i}")
    fake.script([Reply(text="Summary: three questions were asked and answered."), Reply(text="ok")])
    before = len(fake.requests)
    usage_before = len(client.session_updates(session, "usage_update"))
    assert await client.prompt(session, "/compact") == {"stopReason": "end_turn"}
    assert len(fake.requests) == before + 1  # the summary call
    assert "Compacted the conversation" in client.text(session)
    cards = client.session_updates(session, "tool_call_update")
    assert any(str(u.get("title", "")).startswith("Compacted ") for u in cards)  # its own card
    assert len(client.session_updates(session, "usage_update")) > usage_before  # the new size
    await client.prompt(session, "next")
    assert "three questions were asked" in str(fake.requests[-1].body["messages"])
    assert "question 1" not in str(fake.requests[-1].body["messages"])  # the middle went

    # Reloaded, the transcript is the conversation as it happened, not the summary.
    start = len(client.session_updates(session, "user_message_chunk"))
    await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []})
    replayed = [u["content"]["text"] for u in client.session_updates(session, "user_message_chunk")[start:]]
    assert replayed == ["question 0", "question 1", "question 2", "next"]


async def test_compact_of_a_short_conversation_says_so(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    text = await say(client, fake, session, "/compact")
    assert "Nothing to compact" in text


async def test_a_path_is_not_a_command(client: AcpClient, fake: FakeProvider, session: str) -> None:
    fake.script([Reply(text="Let me look at /etc/hosts.")])
    before = len(fake.requests)
    assert await client.prompt(session, "/etc/hosts is broken") == {"stopReason": "end_turn"}
    assert len(fake.requests) == before + 1


async def test_a_command_after_blank_lines_is_still_a_command(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    # The turn decides "not a command" from the first non-blank character, without the
    # commands module; an editor that sends a leading newline must not lose the command.
    text = await say(client, fake, session, "\n  /context")
    assert "tokens in use" in text


async def test_text_before_a_slash_goes_to_the_model(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    fake.script([Reply(text="Sure.")])
    before = len(fake.requests)
    assert await client.prompt(session, "please run /help for me") == {"stopReason": "end_turn"}
    assert len(fake.requests) == before + 1
