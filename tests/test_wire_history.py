"""The history's wire forms are kept between model calls (a long session converts only
what it gained); what goes on the wire must still be exactly what a provider that never
saw the session would send, after an edit, a replaced message or a compression."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest

from hermes_core.loop.compression import apply_compression, plan_compression
from hermes_core.loop.turn_context import HistoryEstimate, estimate_messages_tokens
from hermes_core.messages import Message, RepairedHistory, ToolCall, repair_alternation, user
from hermes_core.providers.anthropic_messages import AnthropicMessagesProvider
from hermes_core.providers.base import ModelRequest, ToolSpec
from hermes_core.providers.chat_completions import ChatCompletionsProvider
from hermes_core.providers.responses import ResponsesProvider
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.sdk_bodies import SDK_SHAPES, bytes_the_sdk_writes, exchange, untransformed

SHAPES = {
    "chat_completions": (ChatCompletionsProvider, "gpt-4.1"),
    "responses": (ResponsesProvider, "gpt-5"),
    "anthropic_messages": (AnthropicMessagesProvider, "claude-sonnet-4"),
}


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def make(shape: str, fake: FakeProvider, model: str | None = None, name: str | None = None) -> Any:
    cls, default_model = SHAPES[shape]
    base = fake.anthropic_base_url if shape == "anthropic_messages" else fake.openai_base_url
    return cls(
        model or default_model,
        api_key="test-key",
        base_url=base,
        name=name or shape,
        timeout=10,
        stale_seconds=5,
    )


async def sent(provider: Any, fake: FakeProvider, history: list[Message]) -> bytes:
    """The body `provider` sends for `history`, as the model received it."""
    fake.script([Reply(text="ok")])
    request = ModelRequest(system="You are terse.", messages=repair_alternation(history))
    try:
        async with aclosing(provider.stream(request)) as items:
            [item async for item in items]
    finally:
        await provider.aclose()
    return fake.requests[-1].raw


async def sent_by_a_fresh_provider(shape: str, fake: FakeProvider, history: list[Message]) -> bytes:
    """The same history (as new message objects) through a provider that kept nothing."""
    return await sent(make(shape, fake), fake, [Message.from_dict(m.to_dict()) for m in history])


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_kept_wire_form_never_outlives_the_message_it_came_from(fake, shape):
    provider = make(shape, fake)  # one provider for the whole session: it keeps wire forms
    history = [m for n in range(6) for m in exchange(n)]

    async def same_as_fresh() -> bytes:
        body = await sent(provider, fake, history)
        assert body == await sent_by_a_fresh_provider(shape, fake, history)
        return body

    await same_as_fresh()
    history += exchange(6)  # the history grew: the new messages are converted too
    assert b"answer 6" in await same_as_fresh()

    history[4].content = "an edited answer"  # a field assigned on a message already sent
    body = await same_as_fresh()
    assert b"an edited answer" in body and b"answer 0" not in body

    call = ToolCall("call_1", "read_file", json.dumps({"path": "other.txt"}))
    history[6] = Message(role="assistant", content="looking again", tool_calls=[call])  # replaced
    body = await same_as_fresh()
    assert b"looking again" in body and b"looking 1" not in body

    plan = plan_compression(history, keep_first=2, keep_last=4)
    assert plan is not None
    history = apply_compression(plan, "what happened so far")
    body = await same_as_fresh()
    assert b"what happened so far" in body and b"answer 2" not in body


# Each API with every optional part of a request in play: (model, provider name).
FULL_REQUESTS = {
    "chat_completions": ("o3", "openai"),
    "chat_completions via openrouter": ("o3", "openrouter"),  # its reasoning effort goes in as `extra_body`
    "responses": ("gpt-5", "openai"),
    "anthropic_messages": ("claude-sonnet-4", "anthropic"),
}


@pytest.mark.parametrize("case", list(FULL_REQUESTS))
async def test_a_body_written_here_is_the_one_the_sdk_wrote(fake, case):
    shape = case.split(" ")[0]
    provider = make(shape, fake, *FULL_REQUESTS[case])
    tool = ToolSpec("read_file", "Read a file «here».", {"type": "object", "properties": {"path": {}}})
    request = ModelRequest(
        system="You are terse. ✓",
        messages=repair_alternation([m for n in range(2) for m in exchange(n)] + [user("and é? 🙂")]),
        tools=[tool],
        max_output_tokens=30_000,
        reasoning_effort="high",
        tool_choice_none=True,
    )
    fake.script([Reply(text="ok")])
    try:
        async with aclosing(provider.stream(request)) as items:
            [item async for item in items]
        params = untransformed(provider.params(request), **SDK_SHAPES[shape])
    finally:
        await provider.aclose()
    ours = fake.requests[-1].raw
    assert ours == await bytes_the_sdk_writes(shape, fake, params)
    effort = b"budget_tokens" if shape == "anthropic_messages" else b'"high"'
    for part in (b"tool_choice", b"30000", effort, "é? 🙂".encode()):
        assert part in ours


def test_the_history_is_repaired_incrementally_as_from_scratch():
    repaired = RepairedHistory()
    history: list[Message] = []
    steps: list[list[Message]] = [
        exchange(0),
        [user("go"), Message(role="assistant", tool_calls=[ToolCall("c1", "read_file", "{}")])],
        [Message(role="tool", content="late result", tool_call_id="c1", name="read_file")],
        [Message(role="assistant", content="failed", display={"notice": "the model failed"})],
        [Message(role="assistant", tool_calls=[ToolCall("c2", "read_file", "{}")]), user("cut short")],
    ]
    for step in steps:
        history += step
        assert repaired.of(history) == repair_alternation(history)
    history = [*history[:3], user("a new list")]  # compression or /clear: a list of its own
    assert repaired.of(history) == repair_alternation(history)
    history[1] = Message(role="assistant", content="no tools now")  # replaced in place
    assert repaired.of(history) == repair_alternation(history)


def test_the_context_estimate_follows_edits_and_replacements():
    estimate = HistoryEstimate()
    history = [m for n in range(3) for m in exchange(n)]
    assert estimate.of("system", history, []) == estimate_messages_tokens("system", history, [])
    history += exchange(3)
    assert estimate.of("system", history, []) == estimate_messages_tokens("system", history, [])
    history[0].content = "a much longer question than before " * 20
    assert estimate.of("system", history, []) == estimate_messages_tokens("system", history, [])
    history[1] = user("short")
    assert estimate.of("system", history, []) == estimate_messages_tokens("system", history, [])
    history = history[:2]
    assert estimate.of("system", history, []) == estimate_messages_tokens("system", history, [])


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_the_tools_sent_are_the_ones_asked_for_when_they_change(fake, shape):
    """A session's provider sends its tools as the last call's bytes only while they are the
    same spec objects: a tool added, a description changed, or a schema where only `1` and
    `true` differ (equal to Python's `==`) is sent as it is now, and byte for byte what a
    provider that never saw the session sends. A spec's schema cannot be changed in place."""
    provider = make(shape, fake)  # kept for the session, as an agent keeps it
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}
    tools = [ToolSpec("read_file", "Read a file.", schema)]

    async def body_with(provider: Any) -> bytes:
        fake.script([Reply(text="ok")])
        request = ModelRequest(system="You are terse.", messages=[user("hi")], tools=list(tools))
        try:
            async with aclosing(provider.stream(request)) as items:
                [item async for item in items]
        finally:
            await provider.aclose()
        return fake.requests[-1].raw

    async def same_as_fresh() -> str:
        body = await body_with(provider)
        assert body == await body_with(make(shape, fake))
        return json.dumps(json.loads(body))

    first = await same_as_fresh()
    assert await same_as_fresh() == first
    tools.append(ToolSpec("write_file", "Write a file.", {"type": "object", "properties": {}}))
    assert "write_file" in await same_as_fresh()
    tools[0] = ToolSpec("read_file", "Read a text file.", schema)
    assert "Read a text file." in await same_as_fresh()
    tools[0] = ToolSpec("read_file", "Read a text file.", {**schema, "properties": {"n": {"default": True}}})
    assert '"default": true' in await same_as_fresh()
    with pytest.raises(TypeError):
        tools[0].parameters["properties"]["limit"] = {"type": "integer"}
    with pytest.raises(TypeError):
        tools[0].parameters.setdefault("required", []).append("n")
