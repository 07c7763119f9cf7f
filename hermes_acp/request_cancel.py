"""`$/cancel_request`: which task serves which request id, and cancelling one.

The SDK's Connection does not hand a request's id to the method handler; the transport
sets `current_request_id` as it hands the request over, and the task the Connection
starts for it inherits that context.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_acp.transport import current_request_id

REQUEST_CANCELLED = -32800

Key = tuple[type, Any]


class InFlightRequests:
    def __init__(self) -> None:
        self._tasks: dict[Key, asyncio.Task[Any]] = {}
        self._prompts: dict[Key, str] = {}  # prompt request -> its session
        self.cancelled: set[Key] = set()

    def enter(self) -> Key | None:
        """Called first thing by a request's handler: its id's key, bound to the running task."""
        key = _key(current_request_id.get())
        task = asyncio.current_task()
        if task is None or key in self._tasks:  # an id reused while in flight: not cancellable
            return None
        self._tasks[key] = task
        return key

    def note_prompt(self, key: Key | None, session_id: Any) -> None:
        if key is not None and isinstance(session_id, str):
            self._prompts[key] = session_id

    def prompt_session(self, request_id: Any) -> str | None:
        """The session of the prompt request `request_id`, if one is in flight."""
        return self._prompts.get(_key(request_id))

    def leave(self, key: Key | None) -> None:
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


def _key(request_id: Any) -> Key:
    # 1 and "1" are different ids; True is not 1
    return (type(request_id), request_id)
