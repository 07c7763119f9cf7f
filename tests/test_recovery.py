"""The recovery levels beyond retry and fallback, over the real SDKs and the scripted
server: credential pools, output-cap lowering, learned context limits, replayed-reasoning
strip, text sanitising."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from hermes_core.config import Settings
from hermes_core.events import Status
from hermes_core.messages import Message, ToolCall, user
from hermes_core.models import context_window
from hermes_core.providers.anthropic_messages import AnthropicMessagesProvider
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.chat_completions import ChatCompletionsProvider
from hermes_core.providers.limits import FILE_NAME, stated_context_limit, stated_output_cap
from hermes_core.providers.resilient import ResilientModel
from hermes_core.providers.resolve import build_chain, build_provider
from hermes_core.providers.responses import ResponsesProvider
from hermes_core.store.sessions import SessionStore
from hermes_core.store.writer import SessionRecord
from tests.support.agents import OPEN_AGENTS, collect, ended, make_agent
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.usefixtures("agent_test")


def kept(provider: Any) -> Any:
    OPEN_AGENTS.append(provider)
    return provider


def kept_provider(kind: type, model: str, base_url: str, name: str, **options: Any) -> Any:
    """A provider of `kind` against the fake, closed after the test."""
    return kept(kind(model, base_url=base_url, name=name, timeout=10, stale_seconds=5, **options))


def chat(
    fake: FakeProvider, key: str = "key-one", keys: list[str] | None = None, model: str = "gpt-4.1"
) -> Any:
    return kept_provider(
        ChatCompletionsProvider, model, fake.openai_base_url, "openai", api_key=key, api_keys=keys
    )


def claude(fake: FakeProvider) -> Any:
    return kept_provider(
        AnthropicMessagesProvider, "claude-sonnet-4", fake.anthropic_base_url, "anthropic", api_key="k"
    )


def responses(fake: FakeProvider) -> Any:
    return kept_provider(ResponsesProvider, "gpt-5", fake.openai_base_url, "responses", api_key="k")


class NoSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def resilient(chain: list[Any], sleep: NoSleep | None = None) -> ResilientModel:
    return ResilientModel(
        chain, max_retries=2, base_delay=0.01, cap_delay=0.05, sleep=sleep or NoSleep(), rng=lambda: 0.5
    )


async def collect_items(model: ResilientModel, req: ModelRequest | None = None) -> list[Any]:
    return [item async for item in model.stream(req or ModelRequest(system="sys", messages=[user("hi")]))]


def statuses(items: list[Any], kind: str) -> list[Status]:
    return [i for i in items if isinstance(i, Status) and i.kind == kind]


# -- credential pools ------------------------------------------------------------------


async def test_a_rate_limited_key_rotates_to_the_next_at_once(fake):
    fake.script([Reply.rate_limited(5), Reply(text="from the second key")])
    sleep = NoSleep()
    items = await collect_items(resilient([chat(fake, "key-one", ["key-two"])], sleep))
    assert items[-1].text == "from the second key"
    assert [r.headers["authorization"] for r in fake.requests] == ["Bearer key-one", "Bearer key-two"]
    assert sleep.delays == []  # another key: no need to wait out the first one's limit
    (rotated,) = statuses(items, "rotating_key")
    assert "key #1 of 2" in rotated.message and "key #2" in rotated.message
    assert rotated.detail["failed_key"] == 1 and rotated.detail["status"] == 429
    shown = json.dumps([rotated.message, rotated.detail])
    assert "key-one" not in shown and "key-two" not in shown


async def test_refused_keys_are_all_tried_before_falling_back(fake):
    fake.script(
        [
            Reply(status=403, error_kind="auth", error_message="forbidden"),
            Reply(status=402, error_message="Insufficient credits"),
            Reply(text="the fallback answers"),
        ]
    )
    items = await collect_items(resilient([chat(fake, "key-one", ["key-two"]), claude(fake)]))
    assert items[-1].text == "the fallback answers"
    assert [s.detail["failed_key"] for s in statuses(items, "rotating_key")] == [1]
    assert len(statuses(items, "falling_back")) == 1
    assert [r.path for r in fake.requests] == ["/v1/chat/completions", "/v1/chat/completions", "/v1/messages"]
    assert fake.requests[1].headers["authorization"] == "Bearer key-two"


def test_pools_come_from_settings_and_numbered_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY_1", "env-one")
    monkeypatch.setenv("OPENAI_API_KEY_2", "env-two")
    monkeypatch.setenv("OPENAI_API_KEY_4", "after-a-gap")
    settings = Settings(home=tmp_path, provider="openai", openai_api_key="main", api_keys=["cfg", "main"])
    assert build_provider(settings).api_keys == ["main", "cfg", "env-one", "env-two"]


# -- output cap --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "message", "cap"),
    [
        ("chat", "max_tokens: 8192 > 4096 available", 4096),
        (
            "anthropic",
            "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again",
            5000,
        ),
    ],
)
async def test_an_overflow_stating_the_available_output_lowers_max_tokens_and_retries(
    fake, shape, message, cap
):
    fake.script(
        [Reply(status=400, error_kind="context_overflow", error_message=message), Reply(text="fits now")]
    )
    provider = chat(fake) if shape == "chat" else claude(fake)
    req = ModelRequest(system="sys", messages=[user("hi")], max_output_tokens=8192)
    items = await collect_items(resilient([provider]), req)
    assert items[-1].text == "fits now"
    sent = fake.requests[1].body
    assert sent.get("max_tokens", sent.get("max_completion_tokens")) == cap
    assert statuses(items, "lowering_output")[0].detail["max_output_tokens"] == cap
    assert req.max_output_tokens == 8192  # for that call only


# -- context probing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.", 8192),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        (
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            1_048_576,
        ),
        ("This model's maximum context length is 32,768 tokens", 32_768),
        ("Input is too long for requested model.", None),
    ],
)
def test_stated_limits_are_read_from_the_common_shapes(message, limit):
    assert stated_context_limit(message) == limit


def test_output_caps_are_read_only_where_stated():
    assert (
        stated_output_cap(
            "you requested 5000 tokens (1000 in the messages, 4000 in the completion). "
            "This model's maximum context length is 4096 tokens"
        )
        == 3096
    )
    assert stated_output_cap("prompt is too long: 210000 tokens > 200000 maximum") is None


def probe_settings(fake: FakeProvider, home: Path) -> Settings:
    return Settings(
        home=home, provider="custom", model="probe-model", base_url=fake.openai_base_url, api_key="k"
    )


async def test_a_stated_context_limit_is_remembered_under_the_home(fake, tmp_path):
    settings = probe_settings(fake, tmp_path)
    chain = [kept(p) for p in build_chain(settings)]
    overflow = (
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens."
    )
    fake.script([Reply(status=400, error_kind="context_overflow", error_message=overflow)])
    items: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async for item in resilient(chain).stream(ModelRequest(system="s", messages=[user("hi")])):
            items.append(item)
    assert caught.value.kind is ErrorKind.CONTEXT_OVERFLOW
    assert statuses(items, "context_limit")[0].detail == {
        "model": "probe-model",
        "context_window": 8192,
        "confirmed": True,
    }
    assert context_window("probe-model", settings.context_windows) == 8192
    assert json.loads((tmp_path / FILE_NAME).read_text()) == {"probe-model": 8192}
    later = probe_settings(fake, tmp_path)  # the next run
    assert context_window("probe-model", later.context_windows) == 128_000
    build_chain(later)
    assert context_window("probe-model", later.context_windows) == 8192


async def test_without_a_stated_limit_the_window_steps_down_in_memory_only(fake, tmp_path):
    settings = probe_settings(fake, tmp_path)
    chain = [kept(p) for p in build_chain(settings)]
    fake.script([Reply(status=400, error_kind="context_overflow", error_message="Input is too long.")] * 2)
    for expected in (65_536, 32_768):
        with pytest.raises(ProviderError):
            await collect_items(resilient(chain))
        assert context_window("probe-model", settings.context_windows) == expected
    assert not (tmp_path / FILE_NAME).exists()


async def test_the_agent_compresses_against_the_learned_window(fake, tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    history = []
    for i in range(8):
        history += [user(f"question {i} " + "words " * 200), Message(role="assistant", content=f"answer {i}")]
    agent = make_agent(
        fake, workdir, messages=history, settings={"model": "probe-model", "compression_keep_last": 4}
    )
    assert agent.context_window == 128_000
    overflow = (
        "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens."
    )
    fake.script(
        [
            Reply(status=400, error_kind="context_overflow", error_message=overflow),
            Reply(text="SUMMARY: eight questions."),
            Reply(text="done"),
        ]
    )
    events = await collect(agent.run_turn("and now?"))
    assert ended(events).text == "done"
    assert agent.context_window == 4096
    assert any(
        isinstance(e, Status) and e.kind == "compressing" and "of 4,096 tokens" in e.message for e in events
    )
    assert "SUMMARY: eight questions." in json.dumps(fake.requests[2].body)


# -- reasoning continuity ----------------------------------------------------------------


def round_trip(message: Message) -> Message:
    """Through a real session store: appended, the store closed, loaded again."""
    with tempfile.TemporaryDirectory() as home:
        db = Path(home) / "sessions.db"
        with SessionStore(db) as store:
            store.create_session(SessionRecord(id="s1", cwd=home))
            store.append_message("s1", message)
        with SessionStore(db) as store:
            (loaded,) = store.load_messages("s1")
    return loaded


async def first_answer(provider: Any, reply: Reply, fake: FakeProvider) -> Message:
    fake.script([reply])
    response = (await collect_items(resilient([provider])))[-1]
    assert isinstance(response, ModelResponse)
    return round_trip(
        Message(
            role="assistant",
            content=response.text,
            tool_calls=response.tool_calls,
            reasoning=response.reasoning,
            provider_data=response.provider_data,
        )
    )


@pytest.mark.parametrize(
    ("shape", "rejection", "replayed_key"),
    [
        ("anthropic", "messages.1.content.0: Invalid `signature` in `thinking` block", "signature"),
        ("responses", "The encrypted content for item rs_fake could not be verified.", "encrypted_content"),
    ],
)
async def test_a_rejected_signature_strips_the_replayed_reasoning_and_retries_once(
    fake, shape, rejection, replayed_key
):
    provider = claude(fake) if shape == "anthropic" else responses(fake)
    answer = await first_answer(provider, Reply(text="42", reasoning="Six times seven."), fake)
    fake.script(
        [Reply(status=400, error_kind="invalid_request", error_message=rejection), Reply(text="without it")]
    )
    history = [user("q"), answer, user("sure?")]
    items = await collect_items(resilient([provider]), ModelRequest(system="s", messages=history))
    assert items[-1].text == "without it"
    assert len(statuses(items, "stripping_reasoning")) == 1
    first, second = (json.dumps(r.body.get("messages") or r.body["input"]) for r in fake.requests[1:3])
    assert replayed_key in first and replayed_key not in second
    assert history[1].provider_data  # the stored history keeps it; only that call went without


async def test_a_second_signature_rejection_is_not_retried_again(fake):
    provider = claude(fake)
    answer = await first_answer(provider, Reply(text="42", reasoning="Six times seven."), fake)
    bad = Reply(status=400, error_message="Invalid `signature` in `thinking` block")
    fake.script([bad, bad, Reply(text="never")])
    with pytest.raises(ProviderError) as caught:
        await collect_items(
            resilient([provider]), ModelRequest(system="s", messages=[user("q"), answer, user("?")])
        )
    assert caught.value.kind is ErrorKind.BAD_REQUEST
    assert len(fake.requests) == 3  # the first answer, the call, the one retry


async def test_gemini_thought_signatures_on_tool_calls_are_replayed(fake):
    signature = {"google": {"thought_signature": "CsYBAR/Ai"}}
    call = ToolCallSpec("read_file", {"path": "a.txt"}, id="call_1", extra_content=signature)
    provider = chat(fake, model="gemini-2.5-pro")
    answer = await first_answer(provider, Reply(tool_calls=[call]), fake)
    assert answer.tool_calls == [ToolCall("call_1", "read_file", '{"path": "a.txt"}')]
    fake.script([Reply(text="read it")])
    result = Message(role="tool", content="hello", tool_call_id="call_1", name="read_file")
    await collect_items(resilient([provider]), ModelRequest(system="s", messages=[user("q"), answer, result]))
    replayed = fake.requests[1].body["messages"][2]["tool_calls"][0]
    assert replayed["extra_content"] == signature


# -- encoding ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["chat", "anthropic", "responses"])
async def test_a_tool_result_with_a_lone_surrogate_goes_through(fake, shape):
    provider = {"chat": chat, "anthropic": claude, "responses": responses}[shape](fake)
    fake.script([Reply(text="fine")])
    history = [
        user("read it"),
        Message(role="assistant", tool_calls=[ToolCall("call_1", "read_file", '{"path": "x"}')]),
        Message(role="tool", content="bytes \ud800 and \udcff here", tool_call_id="call_1", name="read_file"),
    ]
    items = await collect_items(resilient([provider]), ModelRequest(system="s", messages=history))
    assert items[-1].text == "fine"
    assert "bytes \ufffd and \ufffd here" in json.dumps(fake.requests[0].body, ensure_ascii=False)
