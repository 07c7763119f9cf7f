"""What the engine knows about well-known models, and what a call cost: the tokens it
used (`Usage`) and their price (`cost_usd`).

Lookups tolerate the ways people spell a model: provider prefixes
(`anthropic/claude-sonnet-4`), dated or tagged suffixes (`claude-sonnet-4-20250514`,
`gpt-4o-2024-08-06`, `qwen3:latest`, `:free`), and newer variants of a known family
(`claude-sonnet-4-5-preview` falls back to `claude-sonnet-4-5`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from hermes_core.config import Price


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # input tokens served from the provider's prompt cache
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @classmethod
    def split_input(cls, uncached: int, output: int, cache_read: int, cache_write: int) -> Usage:
        """Usage from APIs that count cached input apart from the rest (Anthropic, Bedrock):
        `input_tokens` here is all of it."""
        return cls(
            input_tokens=uncached + cache_read + cache_write,
            output_tokens=output,
            cached_tokens=cache_read,
            cache_write_tokens=cache_write,
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


# How a model reasons, and so how a provider asks for it:
#   "effort"            OpenAI-style `reasoning_effort` / Responses `reasoning.effort`
#   "thinking"          Anthropic extended thinking with a token budget
#   "reasoning_content" reasons on its own, streamed in `reasoning_content`, which must be
#                       sent back with tool calls (DeepSeek-style)
#   "think_tags"        reasons on its own inside <think>...</think> in the content
ReasoningKind = Literal["effort", "thinking", "reasoning_content", "think_tags"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    context_window: int
    images: bool
    reasoning: ReasoningKind | None
    default_output_tokens: int
    known: bool = True


UNKNOWN = ModelInfo(
    context_window=128_000, images=False, reasoning=None, default_output_tokens=8_192, known=False
)

_GPT41 = ModelInfo(1_047_576, True, None, 32_768)
_GPT4O = ModelInfo(128_000, True, None, 16_384)
_GPT5 = ModelInfo(400_000, True, "effort", 128_000)
_O_SERIES = ModelInfo(200_000, True, "effort", 100_000)
_CLAUDE_4 = ModelInfo(200_000, True, "thinking", 64_000)
_CLAUDE_OPUS_4 = ModelInfo(200_000, True, "thinking", 32_000)
_GEMINI_25 = ModelInfo(1_048_576, True, "effort", 65_536)

MODELS: dict[str, ModelInfo] = {
    "gpt-4.1": _GPT41,
    "gpt-4.1-mini": _GPT41,
    "gpt-4.1-nano": _GPT41,
    "gpt-4o": _GPT4O,
    "gpt-4o-mini": _GPT4O,
    "gpt-5": _GPT5,
    "gpt-5-mini": _GPT5,
    "gpt-5-nano": _GPT5,
    "gpt-5.1": _GPT5,
    "gpt-5.2": _GPT5,
    "gpt-5-codex": _GPT5,
    "o1": _O_SERIES,
    "o3": _O_SERIES,
    "o3-pro": _O_SERIES,
    "o3-mini": ModelInfo(200_000, False, "effort", 100_000),
    "o4-mini": _O_SERIES,
    "claude-opus-4": _CLAUDE_OPUS_4,
    "claude-opus-4-1": _CLAUDE_OPUS_4,
    "claude-opus-4-5": ModelInfo(200_000, True, "thinking", 64_000),
    "claude-sonnet-4": _CLAUDE_4,
    "claude-sonnet-4-5": _CLAUDE_4,
    "claude-haiku-4-5": _CLAUDE_4,
    "claude-3-7-sonnet": _CLAUDE_4,
    "claude-3-5-sonnet": ModelInfo(200_000, True, None, 8_192),
    "claude-3-5-haiku": ModelInfo(200_000, False, None, 8_192),
    "gemini-2.5-pro": _GEMINI_25,
    "gemini-2.5-flash": _GEMINI_25,
    "deepseek-chat": ModelInfo(128_000, False, None, 8_192),
    "deepseek-reasoner": ModelInfo(128_000, False, "reasoning_content", 32_768),
    "deepseek-r1": ModelInfo(128_000, False, "think_tags", 32_768),
    "kimi-k2": ModelInfo(131_072, False, None, 16_384),
    "qwen3": ModelInfo(40_960, False, "think_tags", 8_192),
    "qwen3-coder": ModelInfo(262_144, False, None, 65_536),
    "qwq": ModelInfo(131_072, False, "think_tags", 32_768),
}

_DATED = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-preview|-exp)$")
# Bedrock model ids: an optional cross-region prefix, then the vendor
# (`us.anthropic.claude-sonnet-4-20250514-v1:0`).
_BEDROCK_VENDOR = re.compile(
    r"^(?:(?:us|eu|apac|global|jp|au|ca|us-gov)\.)?"
    r"(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|qwen|openai|writer|moonshot)\."
)


@functools.lru_cache(maxsize=256)  # asked several times a model call, always of the same few names
def normalise(model: str) -> str:
    """`anthropic/claude-sonnet-4-20250514` -> `claude-sonnet-4`;
    `us.anthropic.claude-sonnet-4-20250514-v1:0` -> `claude-sonnet-4`."""
    name = model.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    bedrock = _BEDROCK_VENDOR.sub("", name)
    if bedrock != name:
        name = re.sub(r"-v\d+$", "", bedrock)
    while True:
        trimmed = _DATED.sub("", name)
        if trimmed == name:
            return name
        name = trimmed


def lookup(model: str) -> ModelInfo | None:
    """The table entry for a model, or None when it is not known."""
    name = normalise(model)
    while name:
        if name in MODELS:
            return MODELS[name]
        if "-" not in name:
            return None
        name = name.rsplit("-", 1)[0]  # a variant of a known family: drop the last part
    return None


def model_info(model: str) -> ModelInfo:
    return lookup(model) or UNKNOWN


def context_window(model: str, overrides: Mapping[str, int] | None = None) -> int:
    """The model's context window; `overrides` (settings.context_windows) win, by exact or
    normalised name."""
    if overrides:
        for key in (model, normalise(model)):
            if key in overrides:
                return overrides[key]
        wanted = normalise(model)
        for key, value in overrides.items():
            if normalise(key) == wanted:
                return value
    return model_info(model).context_window


def cost_usd(usage: Usage, price: Price) -> float:
    """US dollars for `usage` at `price` (per million tokens). Input tokens include cached
    and cache-write tokens; each of those is billed at its own rate when the price has one."""
    cached = min(usage.cached_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - cached)
    plain = usage.input_tokens - cached - written
    cached_rate = price.input if price.cached_input is None else price.cached_input
    write_rate = price.input if price.cache_write is None else price.cache_write
    total = (
        plain * price.input + cached * cached_rate + written * write_rate + usage.output_tokens * price.output
    )
    return total / 1_000_000
