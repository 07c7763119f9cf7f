"""Writes one session's history and record to the store, in order, off the event loop.

A turn must not wait for SQLite between two streamed chunks, so each write is queued
and a single worker runs the queue in a thread, oldest first, several writes per
thread hop when they pile up. `flush()` waits until everything queued so far is on
disk; the manager calls it before it answers a prompt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.store import SessionStore

log = logging.getLogger(__name__)

Write = Callable[["SessionStore"], Any]


class Persister:
    def __init__(self, session_id: str, open_store: Callable[[], Awaitable[SessionStore]]) -> None:
        self.session_id = session_id
        self._open_store = open_store
        self._pending: list[Write] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker: asyncio.Task[None] | None = None

    def submit(self, write: Write) -> None:
        self._pending.append(write)
        self._idle.clear()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run(), name=f"persist {self.session_id}")

    async def flush(self) -> None:
        # shielded: a cancelled caller must not cancel writes other callers wait for
        await asyncio.shield(self._idle.wait())

    async def _run(self) -> None:
        try:
            store = await self._open_store()
            while self._pending:
                batch, self._pending = self._pending, []
                await asyncio.to_thread(_apply, store, batch, self.session_id)
        except Exception:
            log.exception("could not store session %s; %d write(s) lost", self.session_id, len(self._pending))
            self._pending.clear()
        finally:
            if not self._pending:
                self._idle.set()


def _apply(store: SessionStore, batch: list[Write], session_id: str) -> None:
    for write in batch:
        try:
            write(store)
        except Exception:
            log.exception("a write for session %s failed", session_id)
