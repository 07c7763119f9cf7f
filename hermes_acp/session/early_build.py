"""The session a `session/new` answered before the server existed names, while the server
builds it (hermes_acp/startup/early_session.py answers; server.py builds).

Every request waits here until that session is built and stored, so nothing ever sees
half a session and a `session/list` or another process finds it. A build that failed is
never lost: the first request naming the session gets it as a JSON-RPC error; after
that the session is unknown, as one that never opened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from hermes_acp.session.errors import INTERNAL_ERROR, user_error

log = logging.getLogger(__name__)


class EarlyBuild:
    def __init__(self, session_id: str, build: Coroutine[Any, Any, None]) -> None:
        self.session_id = session_id
        self._task = asyncio.ensure_future(build)
        self._task.add_done_callback(self._log_failure)
        self._reported = False

    def _log_failure(self, task: asyncio.Future[None]) -> None:
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            log.error("session %s (answered early) could not be built", self.session_id, exc_info=failure)

    async def wait(self, named: str | None, *, report: bool) -> bool:
        """Once the build is over; whether it is done with (built, or its failure
        reported). With `report`, a request naming the session gets the build's error."""
        await asyncio.wait({self._task})  # a waiter cancelled does not cancel the build
        failure = None if self._task.cancelled() else self._task.exception()
        if failure is None or self._reported:
            return True
        if report and named == self.session_id:
            self._reported = True
            detail = str(failure) or type(failure).__name__
            raise user_error(
                INTERNAL_ERROR,
                f"session {self.session_id} could not be started: {detail}",
                {"sessionId": self.session_id},
            )
        return False

    async def settle(self, seconds: float) -> None:
        """End of input: the client holds the session's id, so it is stored before the end."""
        await asyncio.wait({self._task}, timeout=seconds)
