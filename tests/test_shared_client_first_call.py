"""A session's first model call takes the HTTP client another session of the process
already made, on the event loop: no thread hop for each of fifty sessions starting at once
(a thread makes a client only when there is none yet: that is blocking work)."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from hermes_core.providers.chat_completions import ChatCompletionsProvider


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor (`asyncio.to_thread`), counting what it is handed."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def provider() -> ChatCompletionsProvider:
    return ChatCompletionsProvider(
        "gpt-4.1",
        api_key="test-key",
        base_url="http://127.0.0.1:9/v1",
        name="openai",
        timeout=10,
        stale_seconds=5,
    )


async def test_the_second_session_takes_the_made_client_without_a_thread() -> None:
    executor = CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    first, second = provider(), provider()
    made = await first.client()
    assert executor.submitted == 1  # the first one is made in a thread
    assert await second.client() is made
    assert executor.submitted == 1
    await first.aclose()
    assert not made.is_closed, "the second session still uses it"
    await second.aclose()
    assert made.is_closed
