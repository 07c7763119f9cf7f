"""Bedrock's Converse API for the scripted provider (tests/support/fake_provider.py).

`POST /model/{modelId}/converse-stream` answers in the AWS event stream framing
(`application/vnd.amazon.eventstream`): each message is a prelude (total length, headers
length, the prelude's CRC32), typed headers (`:message-type`, `:event-type`,
`:content-type`), a JSON payload and the message's CRC32, so botocore's own parser reads
it. Errors before the stream are JSON with an `x-amzn-ErrorType` header; errors inside it
are `exception` messages, as the service sends them.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fake_provider import Reply

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7  # the event stream's header value type for UTF-8 strings

# error kind -> (HTTP status, error type before the stream, exception event inside it)
ERRORS = {
    "rate_limit": (429, "ThrottlingException", "throttlingException"),
    "server": (500, "InternalServerException", "internalServerException"),
    "auth": (403, "AccessDeniedException", None),
    "context_overflow": (400, "ValidationException", "validationException"),
    "overloaded": (503, "ServiceUnavailableException", "serviceUnavailableException"),
}
_MESSAGES = {
    "rate_limit": "Too many requests, please wait before trying again.",
    "server": "The server encountered an internal error.",
    "auth": "You don't have access to the model with the specified model ID.",
    "context_overflow": "Input is too long for requested model.",
    "overloaded": "Bedrock is unable to process your request.",
}
_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
    "refusal": "guardrail_intervened",
}


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event stream message."""
    encoded = b"".join(
        struct.pack("B", len(name.encode()))
        + name.encode()
        + struct.pack(">BH", _STRING, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + encoded + payload
    return body + struct.pack(">I", binascii.crc32(body) & 0xFFFFFFFF)


def event(name: str, data: dict[str, Any]) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(data).encode())


def exception(name: str, message: str) -> bytes:
    headers = {":exception-type": name, ":content-type": "application/json", ":message-type": "exception"}
    return frame(headers, json.dumps({"message": message}).encode())


def error_reply(reply: Reply) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, headers) of an error answered before the stream."""
    kind = reply.error_kind or "server"
    status, error_type, _ = ERRORS.get(kind, ERRORS["server"])
    message = reply.error_message or _MESSAGES.get(kind, "fake provider error")
    headers = {"x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    return reply.status or status, {"message": message}, headers


def signature(reasoning: str) -> str:
    return "sig-" + hashlib.sha256(reasoning.encode()).hexdigest()[:16]


def stream(
    reply: Reply, pieces: Any, argument_pieces: Any, arguments_text: Any, call_id: Any
) -> Iterator[bytes]:
    """The ConverseStream events for `reply` (the helpers come from fake_provider)."""
    yield event("messageStart", {"role": "assistant"})
    index = 0
    if reply.reasoning:
        for piece in pieces(reply.reasoning, reply.chunk_size):
            yield event(
                "contentBlockDelta",
                {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}},
            )
        sign = {"reasoningContent": {"signature": signature(reply.reasoning)}}
        yield event("contentBlockDelta", {"contentBlockIndex": index, "delta": sign})
        yield event("contentBlockStop", {"contentBlockIndex": index})
        index += 1
    if reply.text:
        for piece in pieces(reply.text, reply.chunk_size):
            yield event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}})
        yield event("contentBlockStop", {"contentBlockIndex": index})
        index += 1
    for n, spec in enumerate(reply.tool_calls):
        start = {"toolUse": {"toolUseId": call_id(spec, n, "tooluse"), "name": spec.name}}
        yield event("contentBlockStart", {"contentBlockIndex": index, "start": start})
        for piece in argument_pieces(arguments_text(spec), reply.chunk_size):
            yield event(
                "contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}
            )
        yield event("contentBlockStop", {"contentBlockIndex": index})
        index += 1
    if reply.stream_error:
        kind = reply.stream_error
        name = ERRORS.get(kind, ERRORS["server"])[2] or "modelStreamErrorException"
        yield exception(name, reply.error_message or _MESSAGES.get(kind, "stream error"))
        return
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    yield event("messageStop", {"stopReason": _STOP.get(finish, "end_turn")})
    inp, out, cached = reply.usage
    usage = {
        "inputTokens": inp - cached,
        "outputTokens": out,
        "totalTokens": inp + out,
        "cacheReadInputTokens": cached,
        "cacheWriteInputTokens": 0,
    }
    yield event("metadata", {"usage": usage, "metrics": {"latencyMs": 12}})


def model_list(models: list[str]) -> dict[str, Any]:
    """`GET /foundation-models` (the Bedrock control plane's ListFoundationModels)."""
    return {
        "modelSummaries": [
            {
                "modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{m}",
                "modelId": m,
                "modelName": m,
                "providerName": "Fake",
            }
            for m in models
        ]
    }
