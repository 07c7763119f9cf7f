"""The one thing the bridge needs from a connection: requests and notifications to the client.

`acp.connection.Connection` fits as is; so does anything else with these two methods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class ClientChannel(Protocol):
    async def send_request(self, method: str, params: Any | None = None) -> Any:
        """Send a JSON-RPC request to the client; its result, or RequestError on an error."""
        ...

    async def send_notification(self, method: str, params: Any | None = None) -> None: ...


async def send_updates(channel: ClientChannel, updates: Iterable[dict[str, Any]]) -> None:
    """Send `session/update` notifications in order (params as EventTranslator builds them)."""
    for params in updates:
        await channel.send_notification("session/update", params)
