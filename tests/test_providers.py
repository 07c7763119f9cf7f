"""The three providers against the scripted server, through the real SDKs; plus error
classification, API-mode resolution and the model table."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from hermes_core.config import FallbackEntry, Price, Settings
from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall, user
from hermes_core.models import Usage, context_window, cost_usd, lookup, model_info
from hermes_core.providers.anthropic_messages import AnthropicMessagesProvider
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError, ToolSpec
from hermes_core.providers.chat_completions import ChatCompletionsProvider, ThinkTagParser
from hermes_core.providers.errors import classify_payload, is_context_overflow, parse_retry_after
from hermes_core.providers.resolve import build_chain, build_provider, has_credentials, resolve_api_mode
from hermes_core.providers.responses import ResponsesProvider
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

SHAPES = {
    "chat_completions": (ChatCompletionsProvider, "gpt-4.1"),
    "anthropic_messages": (AnthropicMessagesProvider, "claude-sonnet-4"),
    "responses": (ResponsesProvider, "gpt-5"),
}
READ_FILE = ToolSpec(
    "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
)


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def make(shape: str, fake: FakeProvider, *, model: str | None = None, stale: float = 5.0) -> Any:
    cls, default_model = SHAPES[shape]
    base = fake.anthropic_base_url if shape == "anthropic_messages" else fake.openai_base_url
    return cls(
        model or default_model, api_key="test-key", base_url=base, name=shape, timeout=10, stale_seconds=stale
    )


def request(*messages: Message, **options: Any) -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=list(messages) or [user("hi")], **options)


async def run(provider: Any, req: ModelRequest | None = None) -> list[Any]:
    try:
        async with aclosing(provider.stream(req or request())) as items:
            return [item async for item in items]
    finally:
        await provider.aclose()


async def failure(provider: Any, req: ModelRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await run(provider, req)
    return caught.value


def deltas(items: list[Any], kind: type) -> list[str]:
    return [item.text for item in items if isinstance(item, kind)]


parametrize_shapes = pytest.mark.parametrize("shape", list(SHAPES))


# -- streaming -------------------------------------------------------------------------


@parametrize_shapes
async def test_text_streams_in_chunks_then_one_response(fake, shape):
    # The model stops after its first piece until that piece has come out as a delta.
    fake.script([Reply(text="The quick brown fox", chunk_size=4, hold_after_first_text=True)])
    provider = make(shape, fake)
    items: list[Any] = []
    try:
        async with aclosing(provider.stream(request())) as stream:
            async for item in stream:
                items.append(item)
                if deltas(items, TextDelta) == ["The "]:
                    fake.release_stream()
    finally:
        await provider.aclose()
    assert deltas(items, TextDelta)[0] == "The "
    assert "".join(deltas(items, TextDelta)) == "The quick brown fox"
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert sum(isinstance(i, ModelResponse) for i in items) == 1
    assert (response.text, response.finish_reason, response.tool_calls) == ("The quick brown fox", "stop", [])


@parametrize_shapes
async def test_reasoning_arrives_only_as_thoughts(fake, shape):
    fake.script([Reply(text="42", reasoning="Let me think about it.")])
    items = await run(make(shape, fake))
    assert "".join(deltas(items, ThoughtDelta)) == "Let me think about it."
    assert "".join(deltas(items, TextDelta)) == "42"
    assert (items[-1].text, items[-1].reasoning) == ("42", "Let me think about it.")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "think_tags"])
async def test_every_chat_completions_reasoning_form_becomes_thoughts(fake, field):
    fake.script([Reply(text="The answer is 42.", reasoning="Six times seven.", reasoning_field=field)])
    items = await run(make("chat_completions", fake))
    assert "".join(deltas(items, ThoughtDelta)) == "Six times seven."
    assert "".join(deltas(items, TextDelta)) == "The answer is 42."
    assert not any("think" in text for text in deltas(items, TextDelta))
    assert items[-1].text == "The answer is 42."


def test_think_tag_parser_survives_tags_split_anywhere():
    stream = "<think>a < b</think>answer <b>bold</b>"
    for size in range(1, len(stream) + 1):
        parser = ThinkTagParser()
        out: list[tuple[bool, str]] = []
        for i in range(0, len(stream), size):
            out.extend(parser.feed(stream[i : i + size]))
        out.extend(parser.flush())
        thought = "".join(text for is_thought, text in out if is_thought)
        answer = "".join(text for is_thought, text in out if not is_thought)
        assert (thought, answer) == ("a < b", "answer <b>bold</b>"), size


@parametrize_shapes
async def test_tool_calls_split_across_chunks_are_reassembled(fake, shape):
    first = ToolCallSpec("read_file", {"path": "notes.txt", "offset": 2}, id="call_a")
    second = ToolCallSpec("search", {"pattern": "TODO"}, id="call_b")
    fake.script([Reply(text="Looking.", tool_calls=[first, second], chunk_size=3)])
    response = (await run(make(shape, fake), request(tools=[READ_FILE])))[-1]
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_a", "read_file", {"path": "notes.txt", "offset": 2}),
        ("call_b", "search", {"pattern": "TODO"}),
    ]


@parametrize_shapes
async def test_invalid_json_arguments_pass_through_verbatim(fake, shape):
    fake.script([Reply(tool_calls=[ToolCallSpec("read_file", '{"path": "notes.txt"')])])
    response = (await run(make(shape, fake)))[-1]
    assert response.tool_calls[0].arguments == '{"path": "notes.txt"'


@parametrize_shapes
async def test_usage_is_normalised(fake, shape):
    fake.script([Reply(text="ok", usage=(1200, 80, 1000))])
    response = (await run(make(shape, fake)))[-1]
    assert response.usage == Usage(input_tokens=1200, output_tokens=80, cached_tokens=1000)


FINISHES = [
    (shape, reason)
    for shape in SHAPES
    for reason in ("length", "refusal", "content_filter")
    if not (shape == "anthropic_messages" and reason == "content_filter")
    if not (shape == "responses" and reason == "refusal")
]


@pytest.mark.parametrize(("shape", "reason"), FINISHES)
async def test_finish_reasons_are_normalised(fake, shape, reason):
    fake.script([Reply(text="partial", finish_reason=reason)])
    assert (await run(make(shape, fake)))[-1].finish_reason == reason


async def test_a_responses_refusal_is_reported_as_refusal(fake):
    fake.script([Reply(text="I can't help with that.", finish_reason="refusal")])
    response = (await run(make("responses", fake)))[-1]
    assert (response.text, response.finish_reason) == ("I can't help with that.", "refusal")


# -- failures --------------------------------------------------------------------------

ERRORS = [
    (Reply.rate_limited(0.05), ErrorKind.RATE_LIMIT, 429),
    (Reply.server_error(), ErrorKind.TRANSIENT, 500),
    (Reply.unauthorized(), ErrorKind.AUTH, 401),
    (Reply.context_overflow(), ErrorKind.CONTEXT_OVERFLOW, 400),
    (Reply(status=400, error_message="Invalid value for 'tools'."), ErrorKind.BAD_REQUEST, 400),
]


@parametrize_shapes
@pytest.mark.parametrize(("reply", "kind", "status"), ERRORS, ids=[e[1].value for e in ERRORS])
async def test_http_errors_are_classified(fake, shape, reply, kind, status):
    fake.script([reply])
    error = await failure(make(shape, fake))
    assert (error.kind, error.status, error.provider) == (kind, status, shape)
    assert error.retry_after == (0.05 if kind is ErrorKind.RATE_LIMIT else None)


@parametrize_shapes
async def test_overloaded_is_a_rate_limit(fake, shape):
    fake.script([Reply.overloaded()])
    error = await failure(make(shape, fake))
    assert error.kind is ErrorKind.RATE_LIMIT
    assert error.status == (529 if shape == "anthropic_messages" else 503)


@parametrize_shapes
@pytest.mark.parametrize("cleanly", [False, True], ids=["broken-body", "clean-eof"])
async def test_a_dropped_stream_is_transient(fake, shape, cleanly):
    fake.script([Reply(text="one two three four five six", chunk_size=2, drop_after=4, drop_cleanly=cleanly)])
    provider = make(shape, fake)
    items: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async with aclosing(provider.stream(request())) as stream:
            async for item in stream:
                items.append(item)
    await provider.aclose()
    assert caught.value.kind is ErrorKind.TRANSIENT
    assert not any(isinstance(i, ModelResponse) for i in items)


@parametrize_shapes
async def test_a_stalled_stream_is_stale(fake, shape):
    fake.script([Reply(text="one two three", stall=5)])
    error = await failure(make(shape, fake, stale=0.2))
    assert error.kind is ErrorKind.STALE


@parametrize_shapes
async def test_late_headers_are_stale_too(fake, shape):
    fake.script([Reply(text="late", delay=5)])
    assert (await failure(make(shape, fake, stale=0.2))).kind is ErrorKind.STALE


@parametrize_shapes
async def test_closing_the_stream_early_closes_the_connection(fake, shape):
    fake.script([Reply(text="x" * 400, chunk_size=1, chunk_delay=0.01)])
    provider = make(shape, fake)
    stream = provider.stream(request())
    seen = [await anext(stream), await anext(stream)]
    assert all(isinstance(item, TextDelta) for item in seen)
    await stream.aclose()
    await asyncio.to_thread(fake.wait_for_disconnects, 1, 3.0)
    await provider.aclose()


@parametrize_shapes
async def test_cancelling_the_consumer_closes_the_connection(fake, shape):
    fake.script([Reply(text="x" * 400, chunk_size=1, chunk_delay=0.01)])
    provider = make(shape, fake)
    first = asyncio.Event()

    async def consume() -> None:
        async with aclosing(provider.stream(request())) as stream:
            async for _ in stream:
                first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(fake.wait_for_disconnects, 1, 3.0)
    await provider.aclose()


@parametrize_shapes
async def test_list_models(fake, shape):
    fake.models = ["model-a", "model-b"]
    provider = make(shape, fake)
    assert await provider.list_models() == ["model-a", "model-b"]
    await provider.aclose()


async def test_a_missing_key_is_an_auth_error_before_any_request(fake):
    provider = ChatCompletionsProvider(
        "gpt-4.1", api_key=None, base_url=None, name="openai", timeout=5, stale_seconds=5
    )
    assert (await failure(provider)).kind is ErrorKind.AUTH


# -- what goes on the wire -------------------------------------------------------------

CONVERSATION = [
    user([TextPart("What is in this picture?"), ImagePart("image/png", "iVBORw0KGgo=")]),
    Message(
        role="assistant",
        content="Let me look.",
        reasoning="The user wants a file.",
        tool_calls=[ToolCall("call_1", "read_file", '{"path": "a.txt"}')],
    ),
    Message(role="tool", content="alpha", tool_call_id="call_1", name="read_file"),
    user("And now?"),
]


async def test_chat_completions_wire_format(fake):
    fake.script([Reply(text="ok")])
    await run(make("chat_completions", fake), request(*CONVERSATION, tools=[READ_FILE], max_output_tokens=99))
    body = fake.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    system, picture, assistant, tool, last = body["messages"]
    assert system == {"role": "system", "content": "You are terse."}
    assert picture["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert assistant["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path": "a.txt"}'}
    assert "reasoning_content" not in assistant  # not sent back to a provider that does not need it
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "alpha"}
    assert last == {"role": "user", "content": "And now?"}
    assert body["tools"][0]["function"]["name"] == "read_file"
    assert body["max_tokens"] == 99  # a compatible server, not api.openai.com


async def test_deepseek_style_reasoning_is_sent_back_with_tool_calls(fake):
    fake.script([Reply(text="ok")])
    await run(make("chat_completions", fake, model="deepseek-reasoner"), request(*CONVERSATION))
    assert fake.requests[0].body["messages"][2]["reasoning_content"] == "The user wants a file."


async def test_the_grace_call_asks_for_no_tools(fake):
    fake.script([Reply(text="a"), Reply(text="b"), Reply(text="c")])
    for shape in SHAPES:
        await run(make(shape, fake), request(tools=[READ_FILE], tool_choice_none=True))
    choices = [r.body["tool_choice"] for r in fake.requests]
    assert choices == ["none", {"type": "none"}, "none"]


async def test_anthropic_request_carries_cache_breakpoints(fake):
    fake.script([Reply(text="ok")])
    tools = [READ_FILE, ToolSpec("search", "Search", {"type": "object"})]
    await run(make("anthropic_messages", fake), request(*CONVERSATION, tools=tools))
    body = fake.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    last_user = [m for m in body["messages"] if m["role"] == "user"][-1]
    assert last_user["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(body).count("cache_control") == 3
    assert body["max_tokens"] == model_info("claude-sonnet-4").default_output_tokens


async def test_anthropic_merges_tool_results_into_one_user_message(fake):
    fake.script([Reply(text="ok")])
    history = [
        user("Read both."),
        Message(
            role="assistant",
            tool_calls=[ToolCall("t1", "read_file", '{"path": "a"}'), ToolCall("t2", "read_file", "{bad")],
        ),
        Message(role="tool", content="A", tool_call_id="t1"),
        Message(role="tool", content="no such file", tool_call_id="t2", is_error=True),
        user("Thanks."),
    ]
    await run(make("anthropic_messages", fake), request(*history))
    messages = fake.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][1]["input"] == {"_raw_arguments": "{bad"}
    results = messages[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert results[1]["is_error"] is True and results[0]["tool_use_id"] == "t1"


async def test_anthropic_thinking_is_requested_and_its_signature_replayed(fake):
    fake.script(
        [Reply(reasoning="Check the file first.", tool_calls=[ToolCallSpec("read_file", {"path": "a"})])]
    )
    provider = make("anthropic_messages", fake)
    first = (await run(provider, request(user("go"), reasoning_effort="high", max_output_tokens=32000)))[-1]
    assert fake.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 24576}
    blocks = first.provider_data["thinking_blocks"]
    assert blocks[0]["thinking"] == "Check the file first." and blocks[0]["signature"].startswith("sig-")

    fake.script([Reply(text="done")])
    assistant = Message(
        role="assistant",
        tool_calls=first.tool_calls,
        reasoning=first.reasoning,
        provider_data=first.provider_data,
    )
    tool = Message(role="tool", content="A", tool_call_id=first.tool_calls[0].id)
    await run(provider, request(user("go"), assistant, tool, reasoning_effort="high"))
    replayed = fake.requests[1].body["messages"][1]["content"]
    assert replayed[0] == {
        "type": "thinking",
        "thinking": "Check the file first.",
        "signature": blocks[0]["signature"],
    }
    assert replayed[1]["type"] == "tool_use"


async def test_anthropic_thinking_only_for_models_that_have_it(fake):
    fake.script([Reply(text="ok"), Reply(text="ok")])
    await run(make("anthropic_messages", fake, model="claude-3-5-haiku"), request(reasoning_effort="high"))
    await run(make("anthropic_messages", fake), request())
    assert all("thinking" not in r.body for r in fake.requests)


async def test_responses_wire_format_and_reasoning_replay(fake):
    fake.script(
        [Reply(reasoning="Plan: read it.", tool_calls=[ToolCallSpec("read_file", {"path": "a"}, id="c9")])]
    )
    provider = make("responses", fake)
    first = (await run(provider, request(user("go"), tools=[READ_FILE], reasoning_effort="low")))[-1]
    body = fake.requests[0].body
    assert (body["store"], body["instructions"]) == (False, "You are terse.")
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tools"][0]["name"] == "read_file"
    items = first.provider_data["reasoning_items"]
    assert items[0]["type"] == "reasoning" and items[0]["encrypted_content"].startswith("enc-")

    fake.script([Reply(text="done")])
    assistant = Message(role="assistant", tool_calls=first.tool_calls, provider_data=first.provider_data)
    tool = Message(role="tool", content="A", tool_call_id="c9")
    await run(provider, request(user("go"), assistant, tool))
    sent = fake.requests[1].body["input"]
    assert [i.get("type", "message") for i in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert sent[1]["encrypted_content"] == items[0]["encrypted_content"]
    assert sent[2] == {
        "type": "function_call",
        "call_id": "c9",
        "name": "read_file",
        "arguments": '{"path": "a"}',
    }
    assert sent[3] == {"type": "function_call_output", "call_id": "c9", "output": "A"}


async def test_responses_images_are_input_images(fake):
    fake.script([Reply(text="a cat")])
    await run(make("responses", fake), request(CONVERSATION[0]))
    content = fake.requests[0].body["input"][0]["content"]
    assert content[1]["type"] == "input_image"
    assert content[1]["image_url"] == "data:image/png;base64,iVBORw0KGgo="


# -- error parsing ---------------------------------------------------------------------


def test_retry_after_forms():
    assert parse_retry_after({"Retry-After": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 8192 tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Too many tokens in the request",
        "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000",
        "The input exceeds the context window of this model",
    ],
)
def test_overflow_texts_are_recognised(text):
    assert is_context_overflow(text)


def test_overflow_codes_and_in_stream_errors():
    assert is_context_overflow("bad", "context_length_exceeded")
    assert not is_context_overflow("Invalid value for 'tools'.")
    assert classify_payload("rate_limit_exceeded", "slow down", provider="p").kind is ErrorKind.RATE_LIMIT
    assert classify_payload("server_error", "oops", provider="p").kind is ErrorKind.TRANSIENT
    assert classify_payload(None, "Overloaded", provider="p").kind is ErrorKind.RATE_LIMIT


async def test_a_quota_429_fails_over_instead_of_waiting(fake):
    body = {
        "error": {"message": "You exceeded your current quota", "type": "x", "code": "insufficient_quota"}
    }
    fake.script([Reply(status=429, error_body=body)])
    assert (await failure(make("chat_completions", fake))).kind is ErrorKind.AUTH


async def test_a_rate_limit_message_about_tokens_is_not_an_overflow(fake):
    body = {"error": {"message": "Rate limit: too many tokens per minute", "code": "rate_limit_exceeded"}}
    fake.script([Reply(status=429, error_body=body)])
    assert (await failure(make("chat_completions", fake))).kind is ErrorKind.RATE_LIMIT


# -- resolution ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "base_url", "explicit", "mode"),
    [
        ("anthropic", None, None, "anthropic_messages"),
        ("openai-responses", None, None, "responses"),
        ("openai", None, None, "chat_completions"),
        ("openrouter", "https://openrouter.ai/api/v1", None, "chat_completions"),
        ("custom", "https://gateway.example/anthropic", None, "anthropic_messages"),
        ("custom", "http://localhost:11434/v1", None, "chat_completions"),
        ("openai", None, "responses", "responses"),
        ("anthropic", None, "chat_completions", "chat_completions"),
    ],
)
def test_resolve_api_mode(provider, base_url, explicit, mode):
    assert resolve_api_mode(provider, base_url, explicit) == mode


def settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings.model_validate({"home": tmp_path, **values})


def test_build_provider_picks_key_and_base_url(tmp_path, monkeypatch):
    s = settings(
        tmp_path,
        provider="anthropic",
        model="claude-sonnet-4",
        anthropic_api_key="ak",
        openai_api_key="ok",
        openrouter_api_key="rk",
        stale_stream_seconds=7,
        request_timeout_seconds=70,
    )
    primary = build_provider(s)
    assert isinstance(primary, AnthropicMessagesProvider)
    assert (primary.api_key, primary.base_url, primary.stale_seconds, primary.timeout) == (
        "ak",
        "https://api.anthropic.com",
        7,
        70,
    )
    router = build_provider(s, provider="openrouter", model="qwen/qwen3-coder")
    assert isinstance(router, ChatCompletionsProvider)
    assert (router.api_key, router.base_url, router.name) == (
        "rk",
        "https://openrouter.ai/api/v1",
        "openrouter",
    )
    monkeypatch.setenv("MY_GATEWAY_KEY", "gk")
    gateway = build_provider(
        s, provider="custom", model="m", base_url="http://gw.example/v1", api_key_env="MY_GATEWAY_KEY"
    )
    assert (gateway.api_key, gateway.base_url) == ("gk", "http://gw.example/v1")
    responses = build_provider(s, provider="openai-responses", model="gpt-5")
    assert isinstance(responses, ResponsesProvider) and responses.api_key == "ok"


def test_settings_base_url_overrides_the_configured_provider(tmp_path):
    s = settings(tmp_path, provider="openai", openai_api_key="ok", base_url="http://127.0.0.1:8000/v1")
    assert build_provider(s).base_url == "http://127.0.0.1:8000/v1"
    assert build_provider(s, provider="anthropic").base_url == "https://api.anthropic.com"


def test_build_chain_is_primary_then_fallbacks(tmp_path):
    s = settings(
        tmp_path,
        provider="openai",
        model="gpt-4.1",
        openai_api_key="ok",
        anthropic_api_key="ak",
        fallback=[FallbackEntry(provider="anthropic", model="claude-sonnet-4")],
    )
    chain = build_chain(s, model="gpt-5")
    assert [(p.name, p.model, p.api_mode) for p in chain] == [
        ("openai", "gpt-5", "chat_completions"),
        ("anthropic", "claude-sonnet-4", "anthropic_messages"),
    ]


def test_has_credentials(tmp_path):
    assert not has_credentials(settings(tmp_path, provider="openai"))
    assert has_credentials(settings(tmp_path, provider="openai", openai_api_key="k"))
    assert not has_credentials(settings(tmp_path, provider="anthropic", openai_api_key="k"))
    assert has_credentials(settings(tmp_path, provider="custom", base_url="https://llm.example/v1"))
    assert has_credentials(settings(tmp_path, provider="openai", base_url="http://localhost:11434/v1"))
    assert not has_credentials(settings(tmp_path, provider="openai", base_url="https://llm.example/v1"))


# -- the model table -------------------------------------------------------------------


def test_model_lookup_tolerates_prefixes_dates_and_tags():
    assert lookup("anthropic/claude-sonnet-4") is lookup("claude-sonnet-4-20250514")
    assert lookup("claude-sonnet-4").reasoning == "thinking"
    assert lookup("gpt-4o-2024-08-06").context_window == 128_000
    assert lookup("openai/gpt-4.1-mini").images is True
    assert lookup("deepseek/deepseek-r1:free").reasoning == "think_tags"
    assert lookup("qwen3:latest").reasoning == "think_tags"
    assert lookup("totally-unknown-model") is None
    assert model_info("totally-unknown-model").known is False


def test_context_window_overrides_win():
    assert context_window("gpt-4.1") == 1_047_576
    assert context_window("openai/gpt-4.1", {"gpt-4.1": 50_000}) == 50_000
    assert context_window("my-local-model", {"my-local-model": 32_768}) == 32_768


def test_cost_bills_cached_and_written_tokens_at_their_rates():
    price = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=1_000_000, output_tokens=100_000, cached_tokens=600_000, cache_write_tokens=100_000
    )
    expected = 0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75 + 0.1 * 15.0
    assert cost_usd(usage, price) == pytest.approx(expected)
    assert cost_usd(usage, Price(input=1.0, output=2.0)) == pytest.approx(1.0 + 0.2)
