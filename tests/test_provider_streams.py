"""The providers' streams read off the wire: errors sent inside a 200 stream, and the
oddities real servers send (CRLF, comments, events cut across reads, bad JSON, a body
that stays open after the answer ended)."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from typing import Any

import pytest

from hermes_core.events import TextDelta
from hermes_core.messages import user
from hermes_core.providers.anthropic_messages import AnthropicMessagesProvider
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.chat_completions import ChatCompletionsProvider
from hermes_core.providers.responses import ResponsesProvider
from tests.support.fake_provider import FakeProvider, Reply

SHAPES = {
    "chat_completions": (ChatCompletionsProvider, "gpt-4.1"),
    "anthropic_messages": (AnthropicMessagesProvider, "claude-sonnet-4"),
    "responses": (ResponsesProvider, "gpt-5"),
}
parametrize_shapes = pytest.mark.parametrize("shape", list(SHAPES))


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def make(shape: str, fake: FakeProvider, *, stale: float = 5.0) -> Any:
    cls, model = SHAPES[shape]
    base = fake.anthropic_base_url if shape == "anthropic_messages" else fake.openai_base_url
    return cls(model, api_key="test-key", base_url=base, name=shape, timeout=10, stale_seconds=stale)


async def stream_all(provider: Any) -> tuple[list[Any], ProviderError | None]:
    """Everything the provider yielded, and the ProviderError it ended with, if any."""
    items: list[Any] = []
    try:
        async with aclosing(provider.stream(ModelRequest(system="", messages=[user("hi")]))) as stream:
            async for item in stream:
                items.append(item)
    except ProviderError as exc:
        return items, exc
    finally:
        await provider.aclose()
    return items, None


def text_of(items: list[Any]) -> str:
    return "".join(item.text for item in items if isinstance(item, TextDelta))


# -- errors inside a stream that began with 200 ----------------------------------------

IN_STREAM = [
    ("rate_limit", ErrorKind.RATE_LIMIT),
    ("overloaded", ErrorKind.RATE_LIMIT),
    ("server", ErrorKind.TRANSIENT),
    ("context_overflow", ErrorKind.CONTEXT_OVERFLOW),
    ("auth", ErrorKind.AUTH),
]


@parametrize_shapes
@pytest.mark.parametrize(("error", "kind"), IN_STREAM, ids=[e[0] for e in IN_STREAM])
async def test_an_error_event_inside_the_stream_is_classified(fake, shape, error, kind):
    fake.script([Reply(text="partial answer", stream_error=error)])
    items, failure = await stream_all(make(shape, fake))
    assert failure is not None and failure.kind is kind and failure.provider == shape
    assert text_of(items) == "partial answer"  # what came before the error was shown
    assert not any(isinstance(item, ModelResponse) for item in items)


@pytest.mark.parametrize(("error", "kind"), IN_STREAM, ids=[e[0] for e in IN_STREAM])
async def test_a_failed_response_event_is_classified(fake, error, kind):
    fake.script([Reply(text="partial", stream_error=error, stream_error_event="response.failed")])
    items, failure = await stream_all(make("responses", fake))
    assert failure is not None and failure.kind is kind
    assert not any(isinstance(item, ModelResponse) for item in items)


async def test_an_error_event_message_reaches_the_error(fake):
    fake.script([Reply(text="x", stream_error="server", error_message="upstream model crashed")])
    _, failure = await stream_all(make("anthropic_messages", fake))
    assert failure is not None and "upstream model crashed" in str(failure)


# -- what real servers put on the wire -------------------------------------------------


def chat_event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


CHAT_BODY = (
    b": OPENROUTER PROCESSING\n\n"
    + chat_event({"role": "assistant", "content": ""})
    + chat_event({"content": "Hello"})
    + b": keep-alive\n\n"
    + chat_event({"content": ", wörld"})
    + chat_event({}, "stop")
    + b"data: [DONE]\n\n"
)


@pytest.mark.parametrize("line_end", [b"\n", b"\r\n"], ids=["lf", "crlf"])
async def test_events_cut_across_network_reads_arrive_whole(fake, line_end):
    body = CHAT_BODY.replace(b"\n", line_end)
    pieces = [body[i : i + 7] for i in range(0, len(body), 7)]  # cuts inside JSON and "ö"
    fake.script([Reply(raw_stream=pieces, chunk_delay=0.001)])
    items, failure = await stream_all(make("chat_completions", fake))
    assert failure is None
    assert text_of(items) == "Hello, wörld"
    assert items[-1].finish_reason == "stop"


async def test_a_last_event_without_its_blank_line_still_counts(fake):
    body = (
        b'event: message_start\ndata: {"type": "message_start", "message": {"model": "claude-sonnet-4",'
        b' "usage": {"input_tokens": 3, "output_tokens": 1}}}\n\n'
        b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0,'
        b' "content_block": {"type": "text", "text": ""}}\n\n'
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0,'
        b' "delta": {"type": "text_delta", "text": "done"}}\n\n'
        b'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn"},'
        b' "usage": {"output_tokens": 2}}\n\n'
        b'event: message_stop\ndata: {"type": "message_stop"}'  # the body ends right here
    )
    fake.script([Reply(raw_stream=[body])])
    items, failure = await stream_all(make("anthropic_messages", fake))
    assert failure is None
    assert (items[-1].text, items[-1].usage.output_tokens) == ("done", 2)


@parametrize_shapes
async def test_data_that_is_not_json_is_a_transient_error(fake, shape):
    fake.script([Reply(raw_stream=[b'data: {"type": "message_start", "mess\n\n'])])
    items, failure = await stream_all(make(shape, fake))
    assert failure is not None and failure.kind is ErrorKind.TRANSIENT
    assert "not JSON" in str(failure) and "message_start" in str(failure)
    assert items == []


@parametrize_shapes
async def test_json_of_the_wrong_shape_is_a_transient_error(fake, shape):
    body = b'data: {"choices": [7], "type": "content_block_delta", "index": 0, "delta": 3}\n\n'
    body += b'data: {"type": "response.output_item.added", "item": "x"}\n\n'
    fake.script([Reply(raw_stream=[body])])
    _, failure = await stream_all(make(shape, fake))
    assert failure is not None and failure.kind is ErrorKind.TRANSIENT
    assert "unexpected shape" in str(failure)


async def test_keep_alive_comments_alone_do_not_keep_a_stream_alive(fake):
    first = chat_event({"role": "assistant", "content": "thinking about it"})
    # 400 comments, 16 s of them: the client gives up long before they end, whatever the load
    fake.script([Reply(raw_stream=[first] + [b": keep-alive\n\n"] * 400, chunk_delay=0.04)])
    hung_up_before = fake.disconnects
    items, failure = await stream_all(make("chat_completions", fake, stale=0.25))
    assert failure is not None and failure.kind is ErrorKind.STALE
    assert text_of(items) == "thinking about it"
    # not the whole run of comments: the fake was still sending them when the client hung up
    await asyncio.to_thread(fake.wait_for_disconnects, hung_up_before + 1, 30)


# A complete answer per API; each test sends it, then keeps the body open.
FINISHED = {
    "chat_completions": CHAT_BODY,
    "anthropic_messages": (
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0,'
        b' "delta": {"type": "text_delta", "text": "Hello, w\xc3\xb6rld"}}\n\n'
        b'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn"},'
        b' "usage": {"output_tokens": 2}}\n\n'
        b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
    ),
    "responses": (
        b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta",'
        b' "delta": "Hello, w\xc3\xb6rld"}\n\n'
        b'event: response.completed\ndata: {"type": "response.completed", "response":'
        b' {"status": "completed", "model": "gpt-5", "usage": null}}\n\n'
    ),
}


@parametrize_shapes
async def test_an_answer_ends_when_the_api_says_so_even_if_the_body_stays_open(fake, shape):
    # The body stalls far longer than the stale window: a client waiting for the body to end
    # would give up as stale instead of answering.
    fake.script([Reply(raw_stream=[FINISHED[shape], b": still here\n\n"], stall=120)])
    items, failure = await stream_all(make(shape, fake, stale=3))
    assert failure is None
    assert text_of(items) == "Hello, wörld" and isinstance(items[-1], ModelResponse)
