"""The Provider port: one streaming model call, in a provider-neutral shape."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from hermes_core.errors import HermesError
from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.messages import Message, ToolCall
from hermes_core.models import Usage
from hermes_core.providers.frozen_json import freeze

FinishReason = Literal["stop", "length", "tool_calls", "refusal", "content_filter"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object; frozen (frozen_json.py)

    def __post_init__(self) -> None:
        # Fixed for good, so a provider may send the spec as the bytes it encoded last call.
        object.__setattr__(self, "parameters", freeze(self.parameters))


@dataclass(slots=True)
class ModelRequest:
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_output_tokens: int | None = None
    reasoning_effort: str | None = None  # "low" | "medium" | "high" where the model supports it
    tool_choice_none: bool = False  # the grace call: ask for an answer without tools


@dataclass(slots=True)
class ModelResponse:
    """What one model call produced, once its stream ended."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    provider_data: dict[str, Any] | None = None  # replayed to the same provider next call
    model: str = ""


StreamItem = TextDelta | ThoughtDelta | ModelResponse


def alternating(
    messages: list[Message], blocks_of: Callable[[Message], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Wire messages whose roles alternate (Anthropic's and Bedrock's rule): each message's
    blocks, tool results on the user's side, same-role neighbours merged, empty ones dropped.
    `blocks_of`'s lists are not changed (they may be a message's cached wire form)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = blocks_of(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": list(blocks)})
    return wire


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as the object Anthropic's and Bedrock's tool use carries;
    arguments that were not one are kept as text."""
    try:
        value = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


# Claude's extended thinking (Anthropic and Bedrock): a budget per reasoning effort; the
# API wants at least 1024 tokens and fewer than max_tokens.
THINKING_BUDGET = {"low": 2_048, "medium": 8_192, "high": 24_576}
MIN_THINKING_BUDGET = 1_024

# Claude's stop reasons, as both its APIs name them; each API adds its own.
CLAUDE_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


def thinking_budget(effort: str | None, reasoning: str | None, max_tokens: int) -> int | None:
    """The thinking budget for a reasoning effort, when the model thinks and the output
    limit leaves room for the API's minimum."""
    if not effort or reasoning != "thinking":
        return None
    budget = min(THINKING_BUDGET.get(effort, THINKING_BUDGET["medium"]), max_tokens - 1)
    return budget if budget >= MIN_THINKING_BUDGET else None


@dataclass(slots=True)
class StreamedBlock:
    """One content block of a Claude stream (Anthropic's or Bedrock's) as it arrives: its
    text, thinking or tool input in pieces, joined when read."""

    type: str = "text"
    pieces: list[str] = field(default_factory=list)
    id: str = ""  # a tool call's
    name: str = ""

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def response_from_blocks(
    blocks: dict[int, Any],
    *,
    finish: FinishReason,
    thought_type: str,
    replayed_types: tuple[str, ...],
    replay_key: str,
    usage: Usage,
    model: str,
) -> ModelResponse:
    """The response of a stream of indexed content blocks (Anthropic's and Bedrock's), each
    with a `type`, its `text`, a tool's `id` and `name`, and `replayed()` for reasoning the
    next request must send back (under `provider_data[replay_key]`)."""
    ordered = [blocks[i] for i in sorted(blocks)]
    tool_calls = [ToolCall(b.id, b.name, b.text or "{}") for b in ordered if b.type == "tool_use"]
    replayed = [b.replayed() for b in ordered if b.type in replayed_types]
    return ModelResponse(
        text="".join(b.text for b in ordered if b.type == "text"),
        reasoning="".join(b.text for b in ordered if b.type == thought_type),
        tool_calls=tool_calls,
        finish_reason="tool_calls" if tool_calls and finish == "stop" else finish,
        usage=usage,
        provider_data={replay_key: replayed} if replayed else None,
        model=model,
    )


class ErrorKind(StrEnum):
    RATE_LIMIT = "rate_limit"  # 429 or "overloaded" (529): back off and retry
    AUTH = "auth"  # 401/403: fail over, never retry the same endpoint
    CONTEXT_OVERFLOW = "context_overflow"  # the caller compresses, then retries once
    TRANSIENT = "transient"  # network errors, 5xx, dropped streams: retry, then fail over
    STALE = "stale"  # no chunk within the stale timeout: abort and retry
    BAD_REQUEST = "bad_request"  # 400 that is not an overflow: fail over, no retry
    FATAL = "fatal"


class ProviderError(HermesError):
    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        provider: str = "",
        context_limit: int | None = None,
        output_cap: int | None = None,
        invalid_signature: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        self.provider = provider
        # What the error message told about the endpoint (core/providers/limits.py reads it):
        self.context_limit = context_limit  # the model's real context window, when stated
        self.output_cap = output_cap  # the output tokens still available, when stated
        self.invalid_signature = invalid_signature  # replayed reasoning was rejected

    @property
    def retryable(self) -> bool:
        return self.kind in (ErrorKind.RATE_LIMIT, ErrorKind.TRANSIENT, ErrorKind.STALE)


class Provider(Protocol):
    """One endpoint and model. `stream` yields deltas, then exactly one ModelResponse.

    It raises ProviderError (never an SDK exception) and closes the HTTP stream when
    the consumer stops iterating or is cancelled.
    """

    name: str  # e.g. "openai", "anthropic", "openrouter"
    model: str
    api_mode: str  # "chat_completions" | "anthropic_messages" | "responses"

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]: ...

    async def list_models(self) -> list[str]: ...

    async def aclose(self) -> None: ...
