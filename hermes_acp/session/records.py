"""The session store as the protocol side holds it: one per connection, opened on first
use; stored sessions as session/list shows them; and the cards a cancel or an error
closed, kept in the history for a replay. The
store itself, and what a live session writes to it, is `hermes_core.store`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.state import Session
    from hermes_core.store.sessions import SessionStore
    from hermes_core.store.writer import SessionRecord


class SharedStore:
    """The store every session of a connection uses, opened in a thread the first time
    anything needs it (the path is asked for only then, and SQLite is imported only then:
    start-up stays light)."""

    def __init__(self, path: Callable[[], Path]) -> None:
        self._path = path
        self._store: SessionStore | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> SessionStore:
        if self._store is None:
            async with self._lock:
                if self._store is None:
                    from hermes_core.store.sessions import SessionStore

                    self._store = await asyncio.to_thread(SessionStore, self._path())
        return self._store

    async def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            await asyncio.to_thread(store.close)


def existing_dirs(paths: Iterable[str]) -> list[str]:
    return [path for path in paths if Path(path).is_dir()]


def session_info(record: SessionRecord) -> dict[str, Any]:
    """A stored session as session/list shows it."""
    from datetime import UTC, datetime

    info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd}
    if record.extra_dirs:
        info["additionalDirectories"] = list(record.extra_dirs)
    if record.title:
        info["title"] = record.title
    if record.updated_at:
        stamp = datetime.fromtimestamp(record.updated_at, UTC).isoformat(timespec="milliseconds")
        info["updatedAt"] = stamp.replace("+00:00", "Z")
    return info


# -- what a live session keeps so that session/load shows its thread again -----------------

CLOSED_CALLS = "tool_calls_closed"  # the notice that records a cancel's or an error's closed cards


async def close_cards(channel: ClientChannel, session: Session, message: str) -> None:
    """Close the turn's open tool cards with `message` (a cancel, an error), and keep what
    they showed: a notice in the history (never sent to a model) with each call's output
    so far, from which a replay closes them the same way."""
    from hermes_acp.bridge.channel import send_closing_updates

    cards = session.translator.cards
    outputs = cards.open_outputs()
    updates = cards.close_open(message)
    if outputs:
        from hermes_core.messages import Message
        from hermes_core.store.writer import persist_message

        notice = Message(
            role="assistant",
            display={"notice": CLOSED_CALLS, "message": message, "outputs": outputs},
        )
        session.agent.messages.append(notice)
        persist_message(session, notice)
    await send_closing_updates(channel, updates)
