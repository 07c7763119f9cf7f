"""Retries, backoff and fallback over real providers talking to the scripted server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hermes_core.events import AnswerRestarted, Status, TextDelta, ThoughtDelta
from hermes_core.messages import user
from hermes_core.providers.anthropic_messages import AnthropicMessagesProvider
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.chat_completions import ChatCompletionsProvider
from hermes_core.providers.resilient import ResilientModel
from tests.support.agents import OPEN_AGENTS
from tests.support.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.usefixtures("agent_test")


def chat(fake: FakeProvider, model: str = "gpt-4.1") -> ChatCompletionsProvider:
    provider = ChatCompletionsProvider(
        model, api_key="k", base_url=fake.openai_base_url, name="openai", timeout=10, stale_seconds=5
    )
    OPEN_AGENTS.append(provider)
    return provider


def claude(fake: FakeProvider) -> AnthropicMessagesProvider:
    provider = AnthropicMessagesProvider(
        "claude-sonnet-4",
        api_key="k",
        base_url=fake.anthropic_base_url,
        name="anthropic",
        timeout=10,
        stale_seconds=5,
    )
    OPEN_AGENTS.append(provider)
    return provider


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def resilient(chain: list[Any], sleep: Any = None, *, rng: float = 0.5, **options: Any) -> ResilientModel:
    settings = {"max_retries": 3, "base_delay": 0.1, "cap_delay": 1.0, **options}
    return ResilientModel(chain, sleep=sleep or RecordingSleep(), rng=lambda: rng, **settings)


def request() -> ModelRequest:
    return ModelRequest(system="sys", messages=[user("hi")])


async def collect(model: ResilientModel) -> list[Any]:
    return [item async for item in model.stream(request())]


def statuses(items: list[Any], kind: str) -> list[Status]:
    return [i for i in items if isinstance(i, Status) and i.kind == kind]


async def test_transient_failures_are_retried_until_success(fake):
    fake.script([Reply.server_error(), Reply.rate_limited(None), Reply(text="finally")])
    sleep = RecordingSleep()
    model = resilient([chat(fake)], sleep)
    items = await collect(model)
    assert len(fake.requests) == 3
    retries = statuses(items, "retrying")
    assert [s.detail["attempt"] for s in retries] == [1, 2]
    assert "HTTP 500" in retries[0].detail["error"] and "openai/gpt-4.1" in retries[0].message
    assert [s.detail["delay"] for s in retries] == sleep.delays == [0.05, 0.1]  # rng 0.5 * 0.1 * 2^n
    assert items[-1].text == "finally"
    assert model.current is model.chain[0]


async def test_retry_after_is_a_floor_but_never_above_the_cap(fake):
    fake.script([Reply.rate_limited(0.3), Reply.rate_limited(30), Reply(text="ok")])
    sleep = RecordingSleep()
    await collect(resilient([chat(fake)], sleep, rng=0.0))
    assert sleep.delays == [0.3, 1.0]


async def test_backoff_grows_exponentially_up_to_the_cap(fake):
    model = ResilientModel([chat(fake)], max_retries=5, base_delay=1.0, cap_delay=5.0, rng=lambda: 1.0)
    assert [model.backoff(n, None) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


async def test_retries_run_out_then_the_last_error_is_raised(fake):
    fake.script([Reply.server_error()] * 3)
    sleep = RecordingSleep()
    with pytest.raises(ProviderError) as caught:
        await collect(resilient([chat(fake)], sleep, max_retries=2))
    assert caught.value.kind is ErrorKind.TRANSIENT and caught.value.status == 500
    assert len(fake.requests) == 3 and len(sleep.delays) == 2


async def test_auth_failure_falls_back_at_once_for_the_rest_of_the_turn(fake):
    fake.script([Reply.unauthorized(), Reply(text="from claude"), Reply(text="still claude")])
    sleep = RecordingSleep()
    model = resilient([chat(fake), claude(fake)], sleep)
    items = await collect(model)
    assert sleep.delays == []  # no retry on an auth failure
    (falling,) = statuses(items, "falling_back")
    assert "openai/gpt-4.1" in falling.message and "anthropic/claude-sonnet-4" in falling.message
    assert fake.requests[1].path.endswith("/messages")
    assert fake.requests[1].body["model"] == "claude-sonnet-4"
    assert items[-1].text == "from claude"
    assert model.current is model.chain[1]

    await collect(model)  # the next call of the turn stays on the fallback
    assert fake.requests[2].path.endswith("/messages")
    model.reset()
    assert model.current is model.chain[0]


async def test_retries_exhausted_on_the_primary_fall_over(fake):
    fake.script([Reply.overloaded(), Reply.overloaded(), Reply(text="backup")])
    model = resilient([chat(fake), chat(fake, "gpt-4.1-mini")], max_retries=1)
    items = await collect(model)
    assert len(statuses(items, "retrying")) == 1 and len(statuses(items, "falling_back")) == 1
    assert fake.requests[2].body["model"] == "gpt-4.1-mini"
    assert items[-1].text == "backup"


async def test_when_every_provider_fails_the_last_error_is_raised(fake):
    fake.script([Reply(status=400, error_message="bad tool schema"), Reply.unauthorized()])
    with pytest.raises(ProviderError) as caught:
        await collect(resilient([chat(fake), claude(fake)]))
    assert (caught.value.kind, caught.value.provider) == (ErrorKind.AUTH, "anthropic")
    assert len(fake.requests) == 2


async def test_context_overflow_goes_straight_back_to_the_caller(fake):
    fake.script([Reply.context_overflow(), Reply(text="never")])
    items: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async for item in resilient([chat(fake), claude(fake)]).stream(request()):
            items.append(item)
    assert caught.value.kind is ErrorKind.CONTEXT_OVERFLOW
    assert items == [] and len(fake.requests) == 1


async def test_a_retry_does_not_repeat_what_was_already_shown(fake):
    answer = "Hello brave new world, how are you?"
    thought = "The user greets me warmly."
    fake.script(
        [
            Reply(text=answer, reasoning=thought, chunk_size=3, drop_after=14),
            Reply(text=answer, reasoning=thought, chunk_size=5),
        ]
    )
    items = await collect(resilient([chat(fake)]))
    assert len(statuses(items, "retrying")) == 1
    first_try = items[: items.index(statuses(items, "retrying")[0])]
    assert any(isinstance(i, TextDelta) for i in first_try)  # the drop came mid-answer
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == answer
    assert "".join(i.text for i in items if isinstance(i, ThoughtDelta)) == thought
    assert items[-1].text == answer


async def test_a_retry_that_says_something_else_is_passed_on(fake):
    fake.script([Reply(text="Alpha beta gamma", chunk_size=2, drop_after=3), Reply(text="Different words")])
    items = await collect(resilient([chat(fake)]))
    restarted = next(i for i in items if isinstance(i, AnswerRestarted))
    before, after = items[: items.index(restarted)], items[items.index(restarted) :]
    assert restarted.discarded == "".join(i.text for i in before if isinstance(i, TextDelta))
    assert restarted.discarded and "Alpha beta gamma".startswith(restarted.discarded)
    assert "".join(i.text for i in after if isinstance(i, TextDelta)) == "Different words"
    assert isinstance(items[-1], ModelResponse) and items[-1].text == "Different words"


async def test_a_retry_that_diverges_after_a_shared_prefix_replays_its_whole_text(fake):
    fake.script(
        [Reply(text="partial answer", chunk_size=2, drop_after=7), Reply(text="partial B", chunk_size=3)]
    )
    items = await collect(resilient([chat(fake)]))
    restarted = next(i for i in items if isinstance(i, AnswerRestarted))
    after = items[items.index(restarted) :]
    assert "".join(i.text for i in after if isinstance(i, TextDelta)) == "partial B"


async def test_a_retry_that_stops_short_of_what_was_shown_restarts_the_answer(fake):
    fake.script([Reply(text="one two three four", chunk_size=3, drop_after=5), Reply(text="one")])
    items = await collect(resilient([chat(fake)]))
    restarted = next(i for i in items if isinstance(i, AnswerRestarted))
    after = items[items.index(restarted) :]
    assert "".join(i.text for i in after if isinstance(i, TextDelta)) == "one"
    assert items[-1].text == "one"


async def test_cancelling_during_backoff_stops_at_once(fake):
    fake.script([Reply.server_error(), Reply(text="too late")])
    model = resilient([chat(fake)], asyncio.sleep, rng=1.0, base_delay=60.0, cap_delay=60.0)
    retrying = asyncio.Event()

    async def consume() -> None:
        async for item in model.stream(request()):
            if isinstance(item, Status):
                retrying.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(retrying.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert len(fake.requests) == 1
