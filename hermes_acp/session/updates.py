"""`session/update` notifications the session layer sends outside the event translation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel


async def send_update(channel: ClientChannel, session_id: str, update: dict[str, Any]) -> None:
    await channel.send_notification("session/update", {"sessionId": session_id, "update": update})


async def say(channel: ClientChannel, session_id: str, text: str, meta: dict[str, Any] | None = None) -> None:
    """A message from the agent that no model wrote (command answers, notices)."""
    chunk: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if meta:
        chunk["_meta"] = meta
    await send_update(channel, session_id, chunk)
