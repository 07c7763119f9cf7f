"""The one thing the bridge needs from a connection: requests and notifications to the client;
and the `session/update` notifications sent on it.

`acp.connection.Connection` fits as is; so does anything else with these two methods.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

log = logging.getLogger(__name__)


class ClientChannel(Protocol):
    async def send_request(self, method: str, params: Any | None = None) -> Any:
        """Send a JSON-RPC request to the client; its result, or RequestError on an error."""
        ...

    async def send_notification(self, method: str, params: Any | None = None) -> None: ...


async def send_updates(channel: ClientChannel, updates: Iterable[dict[str, Any]]) -> None:
    """Send `session/update` notifications in order (params as EventTranslator builds them)."""
    for params in updates:
        await channel.send_notification("session/update", params)


async def send_closing_updates(channel: ClientChannel, updates: Iterable[dict[str, Any]]) -> None:
    """`send_updates` for what a turn sends as it ends (closed cards, a cancel's mark): at
    the end of input the client may be gone, and the turn must still answer `cancelled`."""
    try:
        await send_updates(channel, updates)
    except Exception as exc:
        log.info("updates at the end of a turn not sent: %s", exc)


async def send_update(channel: ClientChannel, session_id: str, update: dict[str, Any]) -> None:
    await channel.send_notification("session/update", {"sessionId": session_id, "update": update})


async def say(channel: ClientChannel, session_id: str, text: str, meta: dict[str, Any] | None = None) -> None:
    """A message from the agent that no model wrote (command answers, notices)."""
    await send_update(channel, session_id, said(text, meta))


def said(text: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """`say`'s update: a message of its own (a messageId no other chunk has), so a client
    does not run it into the answer streaming beside it (a `/steer` answered mid-turn)."""
    from hermes_acp.bridge.remote_images import defuse

    chunk: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk",
        # What the model or the workspace wrote reaches these too (`/memory`'s entries, a
        # skill's description, a session's title): no image in them loads.
        "content": {"type": "text", "text": defuse(text)},
        "messageId": uuid.uuid4().hex,
    }
    if meta:
        chunk["_meta"] = meta
    return chunk
