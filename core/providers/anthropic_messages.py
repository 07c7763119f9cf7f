"""Anthropic Messages API: prompt caching breakpoints, extended thinking, tool_use blocks."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.messages import Growth, ImagePart, Message, TextPart
from hermes_core.models import Usage, model_info
from hermes_core.providers import base
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.body import Encoded, dumps
from hermes_core.providers.errors import classify_stream_error
from hermes_core.providers.http import anthropic_headers
from hermes_core.providers.sdk import SdkProvider, encoded_form, wire_form
from hermes_core.providers.sse import close_quietly, deltas_by_read, drain, json_batches

DEFAULT_BASE_URL = "https://api.anthropic.com"
CACHE = {"type": "ephemeral"}
# Thinking budgets per reasoning effort; the API wants at least 1024 and less than max_tokens.
_FINISH: dict[str, base.FinishReason] = {**base.CLAUDE_FINISH, "pause_turn": "stop", "refusal": "refusal"}


# The body's keys in the order the anthropic SDK writes them (its `create()`; parameters
# handed over as `extra_body` kept their place there).
ORDER = ("max_tokens", "messages", "model", "stream", "system", "thinking", "tool_choice", "tools")


def _tool_items(tools: list[base.ToolSpec]) -> list[dict[str, Any]]:
    items = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
    items[-1] = {**items[-1], "cache_control": CACHE}
    return items


class AnthropicMessagesProvider(SdkProvider):
    api_mode = "anthropic_messages"

    def _normalise_base_url(self, base_url: str | None) -> str:
        # The SDK appends "/v1/messages"; accept a base URL written with or without "/v1".
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base

    def _needs_key(self) -> bool:
        return self.base_url == DEFAULT_BASE_URL

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._history = AlternatingHistory()

    models_path = "/v1/models"

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        return anthropic_headers(api_key)

    def _client_base_url(self) -> str:
        return self.base_url or DEFAULT_BASE_URL

    # -- the call ----------------------------------------------------------------------

    def params(self, request: ModelRequest) -> dict[str, Any]:
        info = model_info(self.model)
        max_tokens = request.max_output_tokens or info.default_output_tokens
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": self._history.of(request.messages),
            "stream": True,
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": CACHE}]
        if request.tools:
            params["tools"] = self.encoded_tools(request.tools, _tool_items)
            if request.tool_choice_none:
                params["tool_choice"] = {"type": "none"}
        budget = base.thinking_budget(request.reasoning_effort, info.reasoning, max_tokens)
        if budget is not None:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return params

    async def stream(self, request: ModelRequest) -> AsyncGenerator[base.StreamItem, None]:
        response = await self.open_stream("/v1/messages", self.params(request), ORDER)
        events = json_batches(response, stale_seconds=self.stale_seconds, provider=self.name)
        blocks: dict[int, _Block] = {}
        usage: dict[str, int] = {}
        stop_reason: str | None = None
        finished = False
        model = self.model

        def on_event(name: str, event: Any, read: list[Any]) -> bool:
            nonlocal model, stop_reason, finished
            kind = event.get("type") or name
            if kind == "content_block_delta":
                block = blocks.get(event["index"])
                if block is None:
                    block = blocks[event["index"]] = _Block("text")
                item = block.apply(event["delta"])
                if item is not None:
                    read.append(item)
            elif name == "error" or kind == "error":
                raise classify_stream_error(event.get("error"), provider=self.name)
            elif kind == "message_start":
                message = event.get("message") or {}
                model = message.get("model") or model
                _merge_usage(usage, message.get("usage"))
            elif kind == "content_block_start":
                blocks[event["index"]] = _Block.start(event["content_block"])
            elif kind == "message_delta":
                stop_reason = (event.get("delta") or {}).get("stop_reason") or stop_reason
                _merge_usage(usage, event.get("usage"))
            elif kind == "message_stop":
                finished = True
            return finished

        try:
            async for item in deltas_by_read(events, on_event, provider=self.name):
                yield item
            if finished:
                await drain(events)
        finally:
            await close_quietly(events, response)
        if not finished:
            raise ProviderError(
                ErrorKind.TRANSIENT, "the stream ended before message_stop", provider=self.name
            )
        yield _response(blocks, stop_reason, usage, model)


# -- stream assembly -------------------------------------------------------------------


@dataclass(slots=True)
class _Block(base.StreamedBlock):
    signature: list[str] = field(default_factory=list)
    data: Any = None  # redacted thinking, replayed as it came

    @classmethod
    def start(cls, raw: dict[str, Any]) -> _Block:
        kind = raw.get("type") or "text"
        if kind == "thinking":
            return cls(kind, [raw.get("thinking") or ""], signature=[raw.get("signature") or ""])
        if kind == "redacted_thinking":
            return cls(kind, data=raw.get("data"))
        if kind == "tool_use":
            return cls(kind, id=raw["id"], name=raw["name"])
        if kind == "text":
            return cls(kind, [raw.get("text") or ""])
        return cls(kind)  # server tools and other blocks this engine does not use

    def apply(self, delta: dict[str, Any]) -> TextDelta | ThoughtDelta | None:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text") or ""
            self.pieces.append(text)
            return TextDelta(text) if text else None
        if kind == "thinking_delta":
            thinking = delta.get("thinking") or ""
            self.pieces.append(thinking)
            return ThoughtDelta(thinking) if thinking else None
        if kind == "signature_delta":
            self.signature.append(delta.get("signature") or "")
        elif kind == "input_json_delta":
            self.pieces.append(delta.get("partial_json") or "")
        return None

    def replayed(self) -> dict[str, Any]:
        """A thinking block as the next request must send it back."""
        if self.type == "redacted_thinking":
            return {"type": self.type, "data": self.data}
        return {"type": self.type, "thinking": self.text, "signature": "".join(self.signature)}


def _merge_usage(usage: dict[str, int], raw: dict[str, Any] | None) -> None:
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = (raw or {}).get(key)
        if value is not None:
            usage[key] = value


def _response(
    blocks: dict[int, _Block], stop_reason: str | None, usage: dict[str, int], model: str
) -> ModelResponse:
    return base.response_from_blocks(
        blocks,
        finish=_FINISH.get(stop_reason or "end_turn", "stop"),
        thought_type="thinking",
        replayed_types=("thinking", "redacted_thinking"),
        replay_key="thinking_blocks",
        usage=Usage.split_input(
            usage.get("input_tokens", 0),
            usage.get("output_tokens", 0),
            cache_read=usage.get("cache_read_input_tokens", 0),
            cache_write=usage.get("cache_creation_input_tokens", 0),
        ),
        model=model,
    )


# -- history -> wire -------------------------------------------------------------------


def to_wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Anthropic messages: tool results as user `tool_result` blocks, same-role messages
    merged, empty ones dropped, a cache breakpoint on the last user message; cleaned, each
    message's blocks made once (`wire_form`)."""
    return AlternatingHistory().of(messages)


class AlternatingHistory:
    """`to_wire_messages` of a history that grows between calls, converting and encoding
    only what it gained (`Growth`); for any other list (compressed, cleared, edited) it
    starts over.

    Only the last entry can still change (a same-role message merges into it), and the
    cache breakpoint sits on one of the last two (roles alternate): the entries before
    those are kept with their encodings; the last two are made again on each call.
    """

    def __init__(self) -> None:
        self._growth = Growth()
        self._entries: list[tuple[str, list[dict[str, Any]], list[bytes]]] = []  # role, blocks, encoded
        self._settled: list[dict[str, Any]] = []
        self._settled_json: list[bytes] = []

    def of(self, messages: list[Message]) -> Encoded:
        continued, added = self._growth.added(messages)
        if not continued:
            self._entries, self._settled, self._settled_json = [], [], []
        entries = self._entries
        for message in added:
            blocks = _cached_blocks(message)
            if not blocks:
                continue
            role = "assistant" if message.role == "assistant" else "user"
            encoded = encoded_form(message, ("json", "anthropic"), blocks)
            if entries and entries[-1][0] == role:
                entries[-1][1].extend(blocks)
                entries[-1][2].extend(encoded)
            else:
                entries.append((role, list(blocks), list(encoded)))
        while len(self._settled) < len(entries) - 2:
            role, blocks, encoded = entries[len(self._settled)]
            self._settled.append({"role": role, "content": blocks})
            self._settled_json.append(_entry_json(role, encoded))
        tail = entries[len(self._settled) :]
        marked = max((i for i, entry in enumerate(tail) if entry[0] == "user"), default=-1)
        items, encodings = list(self._settled), list(self._settled_json)
        for i, (role, blocks, encoded) in enumerate(tail):
            blocks, encoded = list(blocks), list(encoded)
            if i == marked:
                blocks[-1] = {**blocks[-1], "cache_control": CACHE}
                encoded[-1] = dumps(blocks[-1])
            items.append({"role": role, "content": blocks})
            encodings.append(_entry_json(role, encoded))
        return Encoded(items, encodings)


def _entry_json(role: str, encoded_blocks: list[bytes]) -> bytes:
    return b'{"role":' + dumps(role) + b',"content":[' + b",".join(encoded_blocks) + b"]}"


def _cached_blocks(message: Message) -> list[dict[str, Any]]:
    return wire_form(message, "anthropic", _blocks)


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        content = _content_blocks(message.content) or [{"type": "text", "text": "(no output)"}]
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": content,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    if message.role == "assistant":
        blocks: list[dict[str, Any]] = [
            dict(b) for b in (message.provider_data or {}).get("thinking_blocks", [])
        ]
        if message.text:
            blocks.append({"type": "text", "text": message.text})
        for call in message.tool_calls:
            tool_input = base.tool_input(call.arguments)
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
        return blocks
    return _content_blocks(message.content)


def _content_blocks(content: str | list[TextPart | ImagePart]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        else:
            source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
            blocks.append({"type": "image", "source": source})
    return blocks
