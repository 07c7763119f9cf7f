"""`$/cancel_request`: which task serves which request id, and cancelling one.

The SDK's Connection does not hand a request's id to the method handler. The id is taken
from the transport as the message is read: the Connection starts one task per request in
the order they arrive, and each task's first step calls the handler, so the handlers
start in arrival order and pop the ids in that order.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

REQUEST_CANCELLED = -32800


class RequestIdTap:
    """The transport, unchanged, except that it notes each incoming request's id."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self.arrived: deque[Any] = deque()

    async def receive(self) -> Any:
        message = await self._transport.receive()
        if isinstance(message, dict) and "method" in message and "id" in message:
            self.arrived.append(message["id"])
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class InFlightRequests:
    def __init__(self, tap: RequestIdTap) -> None:
        self._tap = tap
        self._tasks: dict[tuple[type, Any], asyncio.Task[Any]] = {}
        self.cancelled: set[tuple[type, Any]] = set()
        self._prompts: dict[tuple[type, Any], str] = {}  # prompt request -> its session

    def enter(self) -> tuple[type, Any] | None:
        """Called first thing by a request's handler: its id's key, bound to the running task."""
        if not self._tap.arrived:
            return None
        key = _key(self._tap.arrived.popleft())
        task = asyncio.current_task()
        if task is not None:
            self._tasks[key] = task
        return key

    def note_prompt(self, key: tuple[type, Any] | None, session_id: Any) -> None:
        if key is not None and isinstance(session_id, str):
            self._prompts[key] = session_id

    def prompt_session(self, request_id: Any) -> str | None:
        """The session of the prompt request `request_id`, if one is in flight."""
        return self._prompts.get(_key(request_id))

    def leave(self, key: tuple[type, Any] | None) -> None:
        if key is not None:
            self._tasks.pop(key, None)
            self._prompts.pop(key, None)
            self.cancelled.discard(key)

    def cancel(self, request_id: Any) -> bool:
        """Cancel the task serving `request_id`; False when none is in flight."""
        key = _key(request_id)
        task = self._tasks.get(key)
        if task is None or task.done():
            return False
        self.cancelled.add(key)
        task.cancel()
        return True


def _key(request_id: Any) -> tuple[type, Any]:
    # 1 and "1" are different ids; True is not 1
    return (type(request_id), request_id)
