"""The session store, opened once per connection on first use, and the writes of one
session's history and record to it, in order, off the event loop.

A turn must not wait for SQLite between two streamed chunks, so each write is queued
and a single worker runs the queue in a thread, oldest first, several writes per
thread hop when they pile up. `flush()` waits until everything queued so far is on
disk; the manager calls it before it answers a prompt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.store import SessionStore

log = logging.getLogger(__name__)

Write = Callable[["SessionStore"], Any]


class SharedStore:
    """The SQLite store every session of the connection uses, opened in a thread the
    first time anything needs it (the path is asked for only then)."""

    def __init__(self, path: Callable[[], Path]) -> None:
        self._path = path
        self._store: SessionStore | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> SessionStore:
        if self._store is None:
            async with self._lock:
                if self._store is None:
                    from core.store import SessionStore

                    self._store = await asyncio.to_thread(SessionStore, self._path())
        return self._store

    async def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            await asyncio.to_thread(store.close)


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
