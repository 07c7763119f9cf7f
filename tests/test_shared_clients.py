"""One SDK client per endpoint and key, shared by the providers of a process."""

from __future__ import annotations

import pytest

from hermes_core.providers.chat_completions import ChatCompletionsProvider


def provider(key: str = "k1", url: str = "http://127.0.0.1:9/v1") -> ChatCompletionsProvider:
    return ChatCompletionsProvider(
        "gpt-4.1", api_key=key, base_url=url, name="openai", timeout=10, stale_seconds=5
    )


@pytest.mark.asyncio
async def test_providers_of_one_endpoint_and_key_share_a_client_until_the_last_closes() -> None:
    first, second, other_key, other_url = (
        provider(),
        provider(),
        provider(key="k2"),
        provider(url="http://x/v1"),
    )
    shared = await first.client()
    assert await second.client() is shared
    assert await other_key.client() is not shared
    assert await other_url.client() is not shared

    await first.aclose()
    assert not shared.is_closed  # the second still uses it
    assert await second.client() is shared
    await second.aclose()
    assert shared.is_closed  # the last user closed it: its connections go too

    again = provider()
    assert await again.client() is not shared  # a fresh one, not the closed one
    for leftover in (again, other_key, other_url):
        await leftover.aclose()


@pytest.mark.asyncio
async def test_a_rotated_key_moves_to_that_keys_client() -> None:
    pooled = ChatCompletionsProvider(
        "gpt-4.1",
        api_key="k1",
        api_keys=["k2"],
        base_url="http://127.0.0.1:9/v1",
        name="openai",
        timeout=10,
        stale_seconds=5,
    )
    neighbour = provider(key="k2")
    first = await pooled.client()
    assert await pooled.rotate_key() == 1
    assert first.is_closed  # nobody else used k1's client
    assert await pooled.client() is await neighbour.client()
    await pooled.aclose()
    await neighbour.aclose()
