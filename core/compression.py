"""Compression: when a conversation nears the model's context window, its middle is
summarised by a model (the auxiliary one when set) and replaced by that summary.

What to keep, the summary request and how the history is rebuilt are core/context.py's;
this module runs the summary call for an agent and tells the editor what happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from core.context import apply_compression, plan_compression, summary_request
from core.events import Event, HistoryReplaced, Status
from core.messages import Message
from core.models import Usage
from core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError

if TYPE_CHECKING:
    from core.agent import Agent


async def compress(agent: Agent) -> AsyncIterator[Event]:
    """Replace the middle of the agent's history by a summary, if there is a middle to
    replace; `agent.context_tokens` is its estimate before."""
    plan = plan_compression(agent.messages, keep_last=agent.settings.compression_keep_last)
    if plan is None:
        return
    before = agent.context_tokens
    window = agent.context_window
    yield Status("compressing", f"Compressing the conversation ({before:,} of {window:,} tokens).")
    system, summary_messages = summary_request(plan.middle)
    summary = await summarise(agent, system, summary_messages)
    agent.messages = apply_compression(plan, summary)
    agent.context_tokens = agent.estimate_context()
    yield HistoryReplaced(tuple(agent.messages))
    yield Status(
        "compressed",
        f"Compressed the conversation from {before:,} to {agent.context_tokens:,} tokens.",
        {"before": before, "after": agent.context_tokens},
    )
    yield agent.usage_event(Usage())


async def summarise(agent: Agent, system: str, messages: list[Message]) -> str:
    """The summary's text, from the auxiliary model when one is set, else the agent's."""
    from core.providers.resilient import ResilientModel

    settings = agent.settings
    own_chain = bool(settings.auxiliary_model)
    if own_chain:
        from core.providers.resolve import build_chain

        providers = build_chain(settings, settings.auxiliary_model)
    else:
        providers = agent.providers
    model = ResilientModel(
        providers,
        max_retries=settings.max_retries,
        base_delay=settings.retry_base_seconds,
        cap_delay=settings.retry_cap_seconds,
    )
    response: ModelResponse | None = None
    try:
        request = ModelRequest(system=system, messages=messages)
        async with contextlib.aclosing(model.stream(request)) as stream:
            async for item in stream:
                if isinstance(item, ModelResponse):
                    response = item
    finally:
        if own_chain:
            await model.aclose()
    if response is None or not response.text.strip():
        raise ProviderError(ErrorKind.FATAL, "the summariser returned no text")
    agent.record_usage(response.usage)
    return response.text.strip()
