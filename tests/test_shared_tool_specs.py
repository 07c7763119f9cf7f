"""Sessions on the same tools share their specs and the providers' encoding of them: fifty
sessions starting at once make and encode the tool list once, not once each at their
first model call (the crowd's turn 0)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_core.providers import anthropic_messages, chat_completions, responses
from hermes_core.providers.base import ToolSpec
from hermes_core.providers.body import dumps
from hermes_core.providers.sdk import clean
from hermes_core.tools.builtin import default_tools

SHAPES: dict[str, tuple[Any, Any]] = {
    "chat_completions": (chat_completions.ChatCompletionsProvider, chat_completions._tool_items),
    "responses": (responses.ResponsesProvider, responses._tool_items),
    "anthropic_messages": (anthropic_messages.AnthropicMessagesProvider, anthropic_messages._tool_items),
}


def provider(shape: str) -> Any:
    cls, _ = SHAPES[shape]
    return cls(
        "some-model",
        api_key="test-key",
        base_url="http://127.0.0.1:9",
        name=shape,
        timeout=10,
        stale_seconds=5,
    )


def test_every_session_is_shown_the_very_same_tool_specs() -> None:
    first, second = ([tool.spec() for tool in default_tools()] for _ in range(2))
    assert len(first) == len(second) > 1
    assert all(a is b for a, b in zip(first, second, strict=True))
    todo = next(spec for spec in first if spec.name == "todo")
    assert "$ref" not in json.dumps(todo.parameters), "the todo tool's item schema is still inlined"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_providers_of_sessions_on_the_same_tools_encode_them_once(shape: str) -> None:
    _, convert = SHAPES[shape]
    specs = [tool.spec() for tool in default_tools()]
    first = provider(shape).encoded_tools(specs, convert)
    second = provider(shape).encoded_tools([tool.spec() for tool in default_tools()], convert)
    assert second is first
    assert first.json == b"[" + b",".join(dumps(item) for item in clean(convert(specs))) + b"]"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_equal_specs_that_are_other_objects_are_encoded_afresh(shape: str) -> None:
    # `==` takes a schema's 1 for its true: only the very same objects share bytes.
    _, convert = SHAPES[shape]
    one = [ToolSpec("pick", "Pick.", {"type": "object", "properties": {"n": {"default": 1}}})]
    true = [ToolSpec("pick", "Pick.", {"type": "object", "properties": {"n": {"default": True}}})]
    assert one == true
    assert b'"default":1' in provider(shape).encoded_tools(one, convert).json
    assert b'"default":true' in provider(shape).encoded_tools(true, convert).json
