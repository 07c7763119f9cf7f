"""Compression of a history that outgrew the context window: its middle is summarised by
a model (the auxiliary one when set) and replaced by that summary.

`plan_compression` picks the middle to summarise, `summary_request` builds the summariser's
request, `apply_compression` splices the summary in, and `compress` is the whole of it, a
function from (messages, model) to messages. When to compress is
`hermes_core.loop.turn_context.should_compress`; the agent tells the editor what happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_core.messages import ImagePart, Message, repair_alternation
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, Provider, ProviderError

if TYPE_CHECKING:
    from hermes_core.config import Settings

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
SUMMARY_ACK = "Understood. I have the summary of our earlier conversation and will continue from it."
_BRIDGE = "Continuing; the earlier part of our conversation follows as a summary."

MAX_TOOL_RESULT_CHARS = 1_500  # per tool result in the summariser's transcript
MAX_ARGUMENT_CHARS = 600
MAX_TEXT_CHARS = 6_000  # per user or assistant message
MAX_TRANSCRIPT_CHARS = 400_000  # about 100k tokens for the summariser


@dataclass(slots=True)
class CompressionPlan:
    head: list[Message]
    middle: list[Message]
    tail: list[Message]


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(SUMMARY_PREFIX)


def plan_compression(
    messages: list[Message], *, keep_first: int = 2, keep_last: int = 20
) -> CompressionPlan | None:
    """Split the history into a head and tail kept verbatim and a middle to summarise.

    The head is the first exchange, the tail the last `keep_last` messages; both
    boundaries move so an assistant's tool calls and their results stay together
    (the head grows forward over results, the tail grows backward to the call), and
    the tail never starts with a tool result. None when nothing worth summarising
    is left between them.
    """
    count = len(messages)
    start = min(max(keep_first, 0), count)
    while start < count and messages[start].role == "tool":
        start += 1
    end = max(count - max(keep_last, 0), 0)
    while start < end < count and messages[end].role == "tool":
        end -= 1
    if end <= start:
        return None
    middle = messages[start:end]
    # Only an earlier summary (and its acknowledgement) in the middle: summarising it
    # again buys nothing and would loop.
    if all(is_summary(m) or _is_filler(m) for m in middle):
        return None
    return CompressionPlan(head=messages[:start], middle=middle, tail=messages[end:])


def _is_filler(message: Message) -> bool:
    return message.role == "assistant" and not message.tool_calls and message.text in (SUMMARY_ACK, _BRIDGE)


_SUMMARY_SYSTEM = """\
You summarise part of a conversation between a user and a coding agent, so the agent can \
continue the work without the original messages. The agent will see only your summary in \
place of them, so keep every detail it needs and drop the rest.

Write Markdown with exactly these sections:

## Goal
What the user wants overall, and any constraints or preferences they stated.
## Decisions
Choices made and why, including approaches that were rejected.
## Files touched
Each file read, created or changed, by exact path, with what was done to it.
## Commands run
Commands that matter (tests, builds, installs) and their outcome: passed, failed with \
which error.
## Open problems
Errors, failing tests and questions not yet resolved, with exact messages.
## Next steps
What the agent was about to do next.

Be specific: exact paths, names, commands and error messages beat descriptions of them. \
Write "None." under a section with nothing to say. Output only the summary."""


def summary_request(
    middle: list[Message], *, previous_summary: str | None = None
) -> tuple[str, list[Message]]:
    """The summariser call for `middle`: (system prompt, messages).

    An earlier summary found in `middle` (from a previous compression) is folded in
    like `previous_summary`, so facts survive repeated compression.
    """
    earlier = [previous_summary.strip()] if previous_summary and previous_summary.strip() else []
    blocks = []
    for message in middle:
        if is_summary(message):
            earlier.append(message.text[len(SUMMARY_PREFIX) :].strip())
        elif not _is_filler(message):
            blocks.append(_transcript_entry(message))
    transcript = _cap("\n\n".join(blocks), MAX_TRANSCRIPT_CHARS)
    parts = []
    if earlier:
        parts.append(
            "A summary of the conversation before this part (merge it into yours; keep what "
            "still holds):\n<previous-summary>\n" + "\n\n".join(earlier) + "\n</previous-summary>"
        )
    parts.append("The conversation to summarise:\n<conversation>\n" + transcript + "\n</conversation>")
    parts.append("Write the summary now, in the required sections.")
    return _SUMMARY_SYSTEM, [Message(role="user", content="\n\n".join(parts))]


def _transcript_entry(message: Message) -> str:
    text = message.text
    if not isinstance(message.content, str):
        images = sum(1 for part in message.content if isinstance(part, ImagePart))
        if images:
            text = (text + f"\n[{images} image(s)]").strip()
    if message.role == "tool":
        label = f"[tool result: {message.name or 'tool'}{' (error)' if message.is_error else ''}]"
        return f"{label}\n{_cap(text, MAX_TOOL_RESULT_CHARS)}"
    lines = [f"[{message.role}]"]
    if text:
        lines.append(_cap(text, MAX_TEXT_CHARS))
    for call in message.tool_calls:
        lines.append(f"-> {call.name} {_cap(call.arguments, MAX_ARGUMENT_CHARS)}")
    return "\n".join(lines)


def _cap(text: str, limit: int) -> str:
    """Keep the start and the end (where errors and results usually are)."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[-tail:]}"


def apply_compression(plan: CompressionPlan, summary: str) -> list[Message]:
    """head + the summary as a user message (+ an acknowledgement if the tail starts
    with the user) + tail: a history every provider accepts."""
    summary_message = Message(role="user", content=f"{SUMMARY_PREFIX}\n{summary.strip()}")
    result = list(plan.head)
    if result and result[-1].role in ("user", "tool"):
        # Two user turns in a row (tool results travel as user content on some APIs).
        result.append(Message(role="assistant", content=_BRIDGE))
    result.append(summary_message)
    if not plan.tail or plan.tail[0].role != "assistant":
        result.append(Message(role="assistant", content=SUMMARY_ACK))
    result.extend(plan.tail)
    # A no-op for a well-formed history; a guard against a dangling call in the input.
    return repair_alternation(result)


Summarise = Callable[[str, list[Message]], Awaitable[str]]  # (system, messages) -> the summary


async def compress(messages: list[Message], summarise: Summarise, *, keep_last: int) -> list[Message]:
    """The history with its middle replaced by the model's summary; `messages` itself when
    there is no middle worth summarising."""
    plan = plan_compression(messages, keep_last=keep_last)
    if plan is None:
        return messages
    system, summary_messages = summary_request(plan.middle)
    return apply_compression(plan, await summarise(system, summary_messages))


async def summarise(
    settings: Settings, providers: list[Provider], system: str, messages: list[Message]
) -> ModelResponse:
    """The summariser's answer, from the auxiliary model when one is set, else from
    `providers` (the conversation's own)."""
    from hermes_core.providers.resilient import ResilientModel

    own_chain = bool(settings.auxiliary_model)
    if own_chain:
        from hermes_core.providers.resolve import build_chain

        providers = build_chain(settings, settings.auxiliary_model)
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
    return response
