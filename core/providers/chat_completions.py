"""OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, ...)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall
from hermes_core.models import Usage, model_info
from hermes_core.providers import base
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.errors import classify_stream_error
from hermes_core.providers.http import openai_headers
from hermes_core.providers.sdk import SdkProvider, clean
from hermes_core.providers.sse import close_quietly, deltas_by_read, json_batches

_FINISH: dict[str, base.FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "refusal",
}


# The body's keys in the order the openai SDK writes them (its `create()`), as they were
# sent when it wrote the body: the bulky "tools" went in last, as `extra_body`.
ORDER = (
    "model",
    "stream",
    "messages",
    "max_completion_tokens",
    "max_tokens",
    "reasoning_effort",
    "stream_options",
    "tool_choice",
    "extra_body",
    "tools",
)


def _tool_items(tools: list[base.ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


class ThinkTagParser:
    """Splits streamed content into answer text and `<think>...</think>` reasoning.

    Tags may be split across chunks: a chunk ending in what could be the start of a tag
    is held back until the next chunk decides it.
    """

    OPEN = "<think>"
    CLOSE = "</think>"

    def __init__(self) -> None:
        self.thinking = False
        self._pending = ""

    def feed(self, chunk: str) -> list[tuple[bool, str]]:
        """[(is_thought, text), ...] for what can be decided so far."""
        if not self._pending and "<" not in chunk:
            return [(self.thinking, chunk)]  # no tag can start here: the common case, kept cheap
        buffer = self._pending + chunk
        self._pending = ""
        out: list[tuple[bool, str]] = []
        while buffer:
            tag = self.CLOSE if self.thinking else self.OPEN
            at = buffer.find(tag)
            if at >= 0:
                if at:
                    out.append((self.thinking, buffer[:at]))
                buffer = buffer[at + len(tag) :]
                self.thinking = not self.thinking
                continue
            keep = _partial_suffix(buffer, tag)
            if len(buffer) > keep:
                out.append((self.thinking, buffer[: len(buffer) - keep]))
            self._pending = buffer[len(buffer) - keep :]
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        rest, self._pending = self._pending, ""
        return [(self.thinking, rest)] if rest else []


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


@dataclass(slots=True)
class _PartialCall:
    id: str
    name: str
    arguments: str
    # Provider-specific data the call must be replayed with (Gemini's OpenAI-compatible
    # endpoint: {"google": {"thought_signature": ...}}).
    extra_content: dict[str, Any] | None = None


class ChatCompletionsProvider(SdkProvider):
    api_mode = "chat_completions"

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        return openai_headers(api_key)

    # -- the call ----------------------------------------------------------------------

    def params(self, request: ModelRequest) -> dict[str, Any]:
        info = model_info(self.model)
        echo_reasoning = info.reasoning == "reasoning_content"
        convert = _to_wire_echoing if echo_reasoning else _to_wire_plain
        messages = self.wire_history(request.messages, ("chat_completions", echo_reasoning), convert)
        if request.system:
            messages = messages.after(clean({"role": "system", "content": request.system}))
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = self.encoded_tools(request.tools, _tool_items)
            if request.tool_choice_none:
                params["tool_choice"] = "none"
        if request.max_output_tokens:
            # OpenAI itself wants the new name (its reasoning models reject the old one);
            # compatible servers mostly know only the old one.
            key = "max_completion_tokens" if self._is_openai() else "max_tokens"
            params[key] = request.max_output_tokens
        if request.reasoning_effort and info.reasoning == "effort":
            if self.name == "openrouter":
                params["extra_body"] = {"reasoning": {"effort": request.reasoning_effort}}
            else:
                params["reasoning_effort"] = request.reasoning_effort
        return params

    def _is_openai(self) -> bool:
        return self.base_url is None or "api.openai.com" in self.base_url

    async def stream(self, request: ModelRequest) -> AsyncGenerator[base.StreamItem, None]:
        response = await self.open_stream("/chat/completions", self.params(request), ORDER)
        events = json_batches(response, stale_seconds=self.stale_seconds, provider=self.name)
        text: list[str] = []
        thoughts: list[str] = []
        calls: dict[int, _PartialCall] = {}
        think = ThinkTagParser()
        finish: str | None = None
        usage = Usage()
        model = self.model

        def on_chunk(_: str, chunk: Any, read: list[Any]) -> bool:
            nonlocal model, usage, finish
            if error := chunk.get("error"):
                raise classify_stream_error(error, provider=self.name)
            model = chunk.get("model") or model
            if raw_usage := chunk.get("usage"):
                usage = _usage(raw_usage)
            for choice in chunk.get("choices") or ():
                if delta := choice.get("delta"):
                    read += _deltas(delta, think)
                    for call in delta.get("tool_calls") or ():
                        _merge_call(calls, call)
                if reason := choice.get("finish_reason"):
                    finish = reason
            return False  # read to the end: usage may come after the finish reason

        try:
            async for item in deltas_by_read(events, on_chunk, provider=self.name):
                (thoughts if isinstance(item, ThoughtDelta) else text).append(item.text)
                yield item
            for is_thought, piece in think.flush():
                (thoughts if is_thought else text).append(piece)
                yield ThoughtDelta(piece) if is_thought else TextDelta(piece)
        finally:
            await close_quietly(events, response)
        if finish is None:
            raise ProviderError(
                ErrorKind.TRANSIENT, "the stream ended before the model finished", provider=self.name
            )
        ordered = [c for _, c in sorted(calls.items())]
        tool_calls = [ToolCall(c.id, c.name, c.arguments) for c in ordered]
        extras = {c.id: c.extra_content for c in ordered if c.extra_content}
        reason = _FINISH.get(finish, "stop")
        if tool_calls and reason == "stop":
            reason = "tool_calls"
        yield ModelResponse(
            text="".join(text),
            reasoning="".join(thoughts),
            tool_calls=tool_calls,
            finish_reason=reason,
            usage=usage,
            provider_data={"tool_call_extra": extras} if extras else None,
            model=model,
        )


def _deltas(delta: dict[str, Any], think: ThinkTagParser) -> list[TextDelta | ThoughtDelta]:
    out: list[TextDelta | ThoughtDelta] = []
    for field in ("reasoning_content", "reasoning"):
        value = delta.get(field)
        if value and isinstance(value, str):
            out.append(ThoughtDelta(value))
    if content := delta.get("content"):
        for is_thought, piece in think.feed(content):
            out.append(ThoughtDelta(piece) if is_thought else TextDelta(piece))
    return out


def _merge_call(calls: dict[int, _PartialCall], delta: dict[str, Any]) -> None:
    index = delta.get("index")
    if index is None:
        index = len(calls)
    function = delta.get("function") or {}
    name = function.get("name") or ""
    arguments = function.get("arguments") or ""
    call_id = delta.get("id")
    current = calls.get(index)
    extra = delta.get("extra_content")
    if current is None:
        calls[index] = _PartialCall(
            call_id or f"call_{uuid.uuid4().hex[:24]}",
            name,
            arguments,
            extra if isinstance(extra, dict) else None,
        )
        return
    if isinstance(extra, dict):
        current.extra_content = {**(current.extra_content or {}), **extra}
    if call_id and not current.id:
        current.id = call_id
    if name and not current.name:
        current.name = name
    current.arguments += arguments


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    output_details = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=raw.get("prompt_tokens") or 0,
        output_tokens=raw.get("completion_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or raw.get("prompt_cache_hit_tokens") or 0,
        cache_write_tokens=details.get("cache_write_tokens") or 0,
        reasoning_tokens=output_details.get("reasoning_tokens") or 0,
    )


def _to_wire_echoing(message: Message) -> list[dict[str, Any]]:
    return [_to_wire(message, True)]


def _to_wire_plain(message: Message) -> list[dict[str, Any]]:
    return [_to_wire(message, False)]


def _to_wire(message: Message, echo_reasoning: bool) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            extras = (message.provider_data or {}).get("tool_call_extra") or {}
            wire["tool_calls"] = [_wire_call(c, extras.get(c.id)) for c in message.tool_calls]
            if echo_reasoning and message.reasoning:
                wire["reasoning_content"] = message.reasoning
        if wire["content"] is None and not message.tool_calls:
            wire["content"] = ""
        return wire
    return {"role": message.role, "content": _content(message.content)}


def _wire_call(call: ToolCall, extra: dict[str, Any] | None) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    if extra:
        wire["extra_content"] = extra
    return wire


def _content(content: str | list[TextPart | ImagePart]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if all(isinstance(part, TextPart) for part in content):
        return "".join(part.text for part in content if isinstance(part, TextPart))
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        else:
            parts.append({"type": "image_url", "image_url": {"url": part.data_url}})
    return parts
