"""The store's connection: SQLite write transactions on one file shared by every
hermes-acp process on the machine, and the writes a turn makes (`SessionWriter`).

Writes are short `BEGIN IMMEDIATE` transactions (WAL mode), retried with jitter when
another process holds the lock past the busy timeout; each is committed when its method
returns, so a killed process loses nothing it reported as stored (`synchronous=NORMAL`:
only an OS crash or power loss can drop the last few).
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hermes_core.store.records import (
    UPDATABLE_FIELDS,
    SessionRecord,
    encode_field,
    insert_messages,
    insert_session,
    message_values,
    next_timestamp,
    record_values,
)

if TYPE_CHECKING:
    from hermes_core.messages import Message

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Retries:
    """How long a statement waits for another process's lock, then how often it retries."""

    busy_timeout: float = 5.0
    max_retries: int = 8
    base_seconds: float = 0.02


DEFAULT_RETRIES = Retries()


class SessionWriter:
    """The connection, its transactions, and the writes a turn makes. Thread-safe (one
    connection behind a lock); async callers go through a `Persister` or `to_thread`."""

    def __init__(self, path: Path, retries: Retries) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._retries = retries
        # isolation_level=None: no implicit transactions; every write says BEGIN IMMEDIATE.
        self._conn = sqlite3.connect(
            self.path, timeout=retries.busy_timeout, isolation_level=None, check_same_thread=False
        )

    def create_session(self, record: SessionRecord) -> SessionRecord:
        def write(conn: sqlite3.Connection) -> SessionRecord:
            now = next_timestamp(conn)
            created = SessionRecord(
                **{
                    **record_values(record),
                    "created_at": record.created_at or now,
                    "updated_at": record.updated_at or record.created_at or now,
                }
            )
            insert_session(conn, created)
            return created

        return self._write(write)

    def update_session(self, session_id: str, **changes: Any) -> None:
        unknown = sorted(set(changes) - UPDATABLE_FIELDS)
        if unknown:
            raise ValueError(f"cannot update session field(s): {', '.join(unknown)}")
        if not changes:
            return
        assignments = ", ".join(f"{name} = ?" for name in changes)
        values = [encode_field(name, value) for name, value in changes.items()]

        def write(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values, session_id))
            if cursor.rowcount == 0:
                raise KeyError(session_id)

        self._write(write)

    def append_message(self, session_id: str, message: Message) -> int:
        """Store the message at the end of the session's history; returns its seq (0-based)."""
        values = message_values(message)

        def write(conn: sqlite3.Connection) -> int:
            now = next_timestamp(conn)
            bumped = conn.execute(
                "UPDATE sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?",
                (now, session_id),
            )
            if bumped.rowcount == 0:
                raise KeyError(session_id)
            seq: int = conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            insert_messages(conn, session_id, [(seq, values)], now)
            return seq

        return self._write(write)

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def transaction() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            return result

        return self._retrying(transaction)

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """Run `attempt`, again after a jittered pause while the database stays locked.

        The busy timeout already waits for other writers; this covers the cases it
        does not (a lock held past the timeout, a WAL being recovered).
        """
        retries = self._retries
        with self._lock:
            for tries in range(retries.max_retries + 1):
                try:
                    return attempt()
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or tries == retries.max_retries:
                        raise
                    pause = random.uniform(0.5, 1.5) * retries.base_seconds * 2**tries
                    log.debug("database busy (%s); retrying in %.3fs", exc, pause)
                    time.sleep(pause)
            raise AssertionError("unreachable")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc).lower()
    return "locked" in message or "busy" in message
