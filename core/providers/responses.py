"""OpenAI Responses API, stateless (`store=False`): the whole history goes out every call,
reasoning items included, so the model keeps its train of thought across tool calls."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall
from hermes_core.models import Usage, model_info
from hermes_core.providers import base
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.errors import classify_payload, classify_stream_error
from hermes_core.providers.http import openai_headers
from hermes_core.providers.sdk import SdkProvider
from hermes_core.providers.sse import close_quietly, deltas_by_read, drain, json_batches

_TEXT_EVENTS = {"response.output_text.delta", "response.refusal.delta"}
_THOUGHT_EVENTS = {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
_ENDINGS = {"response.completed", "response.incomplete", "response.failed"}


# The body's keys in the order the openai SDK writes them (its `create()`), as they were
# sent when it wrote the body: the bulky parts went in last, as `extra_body`.
ORDER = (
    "model",
    "stream",
    "include",
    "max_output_tokens",
    "reasoning",
    "store",
    "tool_choice",
    "input",
    "tools",
    "instructions",
)


def _tool_items(tools: list[base.ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,
        }
        for t in tools
    ]


class ResponsesProvider(SdkProvider):
    api_mode = "responses"

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        return openai_headers(api_key)

    # -- the call ----------------------------------------------------------------------

    def params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "input": self.wire_history(request.messages, "responses", _items),
            "stream": True,
            "store": False,
        }
        if request.system:
            params["instructions"] = request.system
        if request.tools:
            params["tools"] = self.encoded_tools(request.tools, _tool_items)
            if request.tool_choice_none:
                params["tool_choice"] = "none"
        if request.max_output_tokens:
            params["max_output_tokens"] = request.max_output_tokens
        if model_info(self.model).reasoning == "effort":
            reasoning: dict[str, Any] = {"summary": "auto"}
            if request.reasoning_effort:
                reasoning["effort"] = request.reasoning_effort
            params["reasoning"] = reasoning
            # Without server-side storage, reasoning can only be replayed encrypted.
            params["include"] = ["reasoning.encrypted_content"]
        return params

    async def stream(self, request: ModelRequest) -> AsyncGenerator[base.StreamItem, None]:
        response = await self.open_stream("/responses", self.params(request), ORDER)
        events = json_batches(response, stale_seconds=self.stale_seconds, provider=self.name)
        text: list[str] = []
        thoughts: list[str] = []
        refused = False
        calls: dict[str, dict[str, str]] = {}  # item id -> {call_id, name, arguments}
        reasoning_items: list[dict[str, Any]] = []
        final: dict[str, Any] | None = None

        def on_event(name: str, event: Any, read: list[Any]) -> bool:
            nonlocal refused, final
            kind = event.get("type") or name
            if kind in _TEXT_EVENTS:
                refused = refused or kind == "response.refusal.delta"
                if delta := event.get("delta"):
                    text.append(delta)
                    read.append(TextDelta(delta))
            elif kind in _THOUGHT_EVENTS:
                if delta := event.get("delta"):
                    thoughts.append(delta)
                    read.append(ThoughtDelta(delta))
            elif kind == "response.function_call_arguments.delta":
                item_id = event["item_id"]
                blank = {"call_id": item_id, "name": "", "arguments": ""}
                call = calls.setdefault(item_id, blank)
                call["arguments"] += event.get("delta") or ""
            elif kind in ("response.output_item.added", "response.output_item.done"):
                _output_item(kind, event["item"], calls, reasoning_items)
            elif kind == "error":
                raise classify_stream_error(event, provider=self.name)
            elif kind in _ENDINGS:
                final = event["response"]
            elif error := event.get("error"):  # an API error sent as a bare data line
                raise classify_stream_error(error, provider=self.name)
            return final is not None

        try:
            async for item in deltas_by_read(events, on_event, provider=self.name):
                yield item
            if final is not None:
                await drain(events)
        finally:
            await close_quietly(events, response)
        if final is None:
            raise ProviderError(
                ErrorKind.TRANSIENT, "the stream ended before the response completed", provider=self.name
            )
        if final.get("status") == "failed":
            error = final.get("error") or {}
            code = error.get("code")
            message = error.get("message") or "the response failed"
            raise classify_payload(str(code) if code else None, message, provider=self.name)
        tool_calls = [ToolCall(c["call_id"], c["name"], c["arguments"]) for c in calls.values()]
        yield ModelResponse(
            text="".join(text),
            reasoning="".join(thoughts),
            tool_calls=tool_calls,
            finish_reason=_finish(final, refused, bool(tool_calls)),
            usage=_usage(final.get("usage")),
            provider_data={"reasoning_items": reasoning_items} if reasoning_items else None,
            model=final.get("model") or self.model,
        )


def _output_item(
    kind: str, item: dict[str, Any], calls: dict[str, dict[str, str]], reasoning_items: list[dict[str, Any]]
) -> None:
    if item.get("type") == "function_call":
        # added: arguments follow as deltas; done: they come whole
        done = kind == "response.output_item.done"
        calls[item.get("id") or item["call_id"]] = {
            "call_id": item["call_id"],
            "name": item.get("name") or "",
            "arguments": (item.get("arguments") or "") if done else "",
        }
    elif item.get("type") == "reasoning" and kind == "response.output_item.done":
        reasoning_items.append(_without_none(item))


def _finish(final: dict[str, Any], refused: bool, has_calls: bool) -> base.FinishReason:
    if final.get("status") == "incomplete":
        details = final.get("incomplete_details") or {}
        return "content_filter" if details.get("reason") == "content_filter" else "length"
    if refused:
        return "refusal"
    return "tool_calls" if has_calls else "stop"


def _usage(raw: dict[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    details = raw.get("input_tokens_details") or {}
    output_details = raw.get("output_tokens_details") or {}
    return Usage(
        input_tokens=raw.get("input_tokens") or 0,
        output_tokens=raw.get("output_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or 0,
        cache_write_tokens=details.get("cache_write_tokens") or 0,
        reasoning_tokens=output_details.get("reasoning_tokens") or 0,
    )


def _without_none(value: Any) -> Any:
    """An output item as the next request replays it: unset (null) fields left out."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


# -- history -> input items ------------------------------------------------------------


def _items(message: Message) -> list[dict[str, Any]]:
    """One message as input items (`SdkProvider.wire_history` keeps and cleans them)."""
    if message.role == "tool":
        output = message.text or "(no output)"
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": output}]
    if message.role == "assistant":
        items = [dict(i) for i in (message.provider_data or {}).get("reasoning_items", [])]
        if message.text:
            items.append({"role": "assistant", "content": message.text})
        for call in message.tool_calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
        return items
    return [{"role": message.role, "content": _content(message.content)}]


def _content(content: str | list[TextPart | ImagePart]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [
        {"type": "input_text", "text": part.text}
        if isinstance(part, TextPart)
        else {"type": "input_image", "image_url": part.data_url, "detail": "auto"}
        for part in content
    ]
