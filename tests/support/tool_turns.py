"""A scripted model's tool calls, and what the server sent the model back: the turn helpers
the end-to-end tests of approvals, rules and the sandbox share."""

from __future__ import annotations

from typing import Any

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec


def call(tool: str, arguments: dict[str, Any], call_id: str) -> list[Reply]:
    """One tool call, then the model's closing text."""
    return [Reply(tool_calls=[ToolCallSpec(tool, arguments, id=call_id)]), Reply(text="Done.")]


def commands(*lines: str) -> list[Reply]:
    """One `terminal` call per command line, in one reply, then the closing text."""
    calls = [ToolCallSpec("terminal", {"command": line}, id=f"call_{i}") for i, line in enumerate(lines)]
    return [Reply(tool_calls=calls), Reply(text="Done.")]


def tool_results(fake: FakeProvider) -> list[str]:
    """The tool results of the last request the model got."""
    messages = fake.requests[-1].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def tool_result(fake: FakeProvider) -> str:
    """The last tool result of the last request the model got."""
    return tool_results(fake)[-1]


async def asks(client: AcpClient, fake: FakeProvider, sid: str, tool: str, arguments: dict[str, Any]) -> bool:
    """Whether the call asked the user (whose answer is the client's current policy)."""
    before = len(client.permission_requests)
    fake.script(call(tool, arguments, f"call_{before}_{tool}"))
    assert await client.prompt(sid, f"use {tool}") == {"stopReason": "end_turn"}
    return len(client.permission_requests) > before


async def said(client: AcpClient, sid: str, prompt: str) -> str:
    """The agent's text in answer to `prompt`."""
    before = len(client.text(sid))
    await client.prompt(sid, prompt)
    return client.text(sid)[before:]
