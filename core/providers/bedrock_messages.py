"""The conversation as Bedrock's Converse API wants it (history -> Converse messages)."""

from __future__ import annotations

import base64
from typing import Any

from hermes_core.messages import ImagePart, Message, TextPart
from hermes_core.providers.base import alternating, tool_input
from hermes_core.providers.sdk import wire_form

_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def to_converse_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Converse messages: tool results as user `toolResult` blocks, same-role messages
    merged (the API wants user and assistant to alternate), empty ones dropped; cleaned,
    each message's blocks made once and kept on it (`wire_form`)."""
    return alternating(messages, _cached_blocks)


def _cached_blocks(message: Message) -> list[dict[str, Any]]:
    return wire_form(message, "bedrock", _blocks)


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        content = _content(message.content) or [{"text": "(no output)"}]
        result = {"toolUseId": message.tool_call_id or "", "content": content}
        result["status"] = "error" if message.is_error else "success"
        return [{"toolResult": result}]
    if message.role == "assistant":
        blocks: list[dict[str, Any]] = []
        for replayed in (message.provider_data or {}).get("reasoning_blocks", []):
            if "redactedContent" in replayed:
                replayed = {"redactedContent": base64.b64decode(replayed["redactedContent"])}
            blocks.append({"reasoningContent": replayed})
        if message.text:
            blocks.append({"text": message.text})
        for call in message.tool_calls:
            blocks.append(
                {"toolUse": {"toolUseId": call.id, "name": call.name, "input": tool_input(call.arguments)}}
            )
        return blocks
    return _content(message.content)


def _content(content: str | list[TextPart | ImagePart]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"text": part.text})
        else:
            image_format = _IMAGE_FORMATS.get(part.mime_type.lower(), "png")
            blocks.append(
                {"image": {"format": image_format, "source": {"bytes": base64.b64decode(part.data)}}}
            )
    return blocks
