"""Conversations and SDK calls for the tests that hold the request bodies we write
(core/providers/body.py) to the bytes each provider's own SDK writes."""

from __future__ import annotations

import json
from typing import Any

from hermes_core.messages import Message, ToolCall, user
from hermes_core.providers.sdk import clean
from tests.support.fake_provider import FakeProvider, Reply

# How each SDK's `create()` was handed a body when the SDK still wrote the bodies
# (`untransformed` turns one of our bodies back into that).
SDK_SHAPES: dict[str, dict[str, Any]] = {
    "chat_completions": {"bulky": ("messages", "tools"), "placeholders": {"messages": []}},
    "responses": {"bulky": ("input", "tools", "instructions"), "placeholders": {}},
    "anthropic_messages": {"bulky": ("messages", "tools", "system"), "placeholders": {"messages": []}},
}


def untransformed(
    params: dict[str, Any],
    *,
    bulky: tuple[str, ...],
    placeholders: dict[str, Any],
    cleaned: tuple[str, ...] = (),
) -> dict[str, Any]:
    """`params` for an SDK `create()` with its bulky, already wire-shaped parts moved to
    `extra_body`: how requests were handed to the SDKs before the bodies were written by
    us (`hermes_core.providers.sdk.open_stream`), the reference the tests and benchmarks compare
    our bytes and speed with.

    The SDKs walk every request parameter against their TypedDicts before sending
    (`async_maybe_transform`): on a long history that costs ~3 ms per message and call,
    for JSON we built in wire shape already. `extra_body` (public API) is merged into
    the body after that walk, so those parts go out as they are; `placeholders` stand
    in for required parameters meanwhile. Text that is not valid Unicode is cleaned here,
    on its way out, instead of failing the request (`clean`), except in the `cleaned`
    parameters: the history, built from wire forms each cleaned once (`wire_form`), which
    a walk on every call would make cost O(history) per turn.
    """
    out = {key: value if key in cleaned else clean(value) for key, value in params.items()}
    extra = dict(out.pop("extra_body", None) or {})
    for key in bulky:
        if key in out:
            extra[key] = out.pop(key)
            if key in placeholders:
                out[key] = placeholders[key]
    if extra:
        out["extra_body"] = extra
    return out


def exchange(n: int) -> list[Message]:
    """Turn `n` of a conversation: a question, a tool call and its result (text beyond
    ASCII), a follow-up and the answer."""
    call = ToolCall(f"call_{n}", "read_file", json.dumps({"path": f"file{n}.txt"}))
    return [
        user(f"question {n}"),
        Message(role="assistant", content=f"looking {n}", tool_calls=[call]),
        Message(role="tool", content=f"contents of file {n} é", tool_call_id=call.id, name="read_file"),
        user(f"also this, {n}"),  # merged with the result into one user turn (Anthropic, Bedrock)
        Message(role="assistant", content=f"answer {n}"),
    ]


async def bytes_the_sdk_writes(api: str, fake: FakeProvider, params: dict[str, Any]) -> bytes:
    """`params` sent through the streaming `create()` of `api`'s SDK: the body the fake got."""
    import anthropic
    import openai

    fake.script([Reply(text="ok")])
    if api == "anthropic_messages":
        client: Any = anthropic.AsyncAnthropic(
            api_key="test", base_url=fake.anthropic_base_url, max_retries=0
        )
        create = client.messages.with_streaming_response.create
    else:
        client = openai.AsyncOpenAI(api_key="test", base_url=fake.openai_base_url, max_retries=0)
        endpoint = client.responses if api == "responses" else client.chat.completions
        create = endpoint.with_streaming_response.create
    try:
        async with create(**params) as response:
            await response.read()
    finally:
        await client.close()
    return fake.requests[-1].raw
