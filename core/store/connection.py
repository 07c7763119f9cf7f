"""The store's connection: SQLite write transactions on one file shared by every
hermes-acp process on the machine, and the writes a turn makes (`SessionWriter`).

Writes are short `BEGIN IMMEDIATE` transactions (WAL mode), retried with jitter when
another process holds the lock past the busy timeout; each is committed when its method
returns, so a killed process loses nothing it reported as stored (`synchronous=NORMAL`:
only an OS crash or power loss can drop the last few). The live sessions' queue runs what
piled up as one transaction (`together`), each write in a savepoint of its own: one commit
for fifty sessions' writes instead of one each, and still committed before any of them is
reported stored; a process killed meanwhile loses the whole batch, which nobody was told
had been stored.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hermes_core.private_files import private_file, tighten_existing
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
        # The conversations are the user's alone (core/private_files.py); SQLite makes its
        # `-wal` and `-shm` with the database's mode, older ones are tightened here.
        private_file(self.path)
        for beside in ("-wal", "-shm", "-journal"):
            tighten_existing(self.path.with_name(self.path.name + beside))
        self._lock = threading.RLock()
        self._retries = retries
        self._together = False  # a batch's transaction is open (`together`); read under the lock
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

    def together(
        self, jobs: Sequence[Callable[[], object]], failed: Callable[[int, Exception], None]
    ) -> None:
        """Run `jobs` (each makes writes through this writer) in one transaction, committed
        once they all ran; a job that raises has its writes rolled back alone (a savepoint)
        and is reported to `failed` with its index, the others still land. Should SQLite
        end the transaction itself (a full disk, an I/O error), what the batch wrote so far
        is gone with it, so every job is run again in a transaction of its own, as it would
        have been without a batch."""
        reported: set[int] = set()

        def report(index: int, exc: Exception) -> None:
            if index not in reported:
                reported.add(index)
                failed(index, exc)

        with self._lock:
            # A lone job is its own transaction(s), as without a batch: no savepoint to pay.
            if len(jobs) == 1 or not self._together_ran(jobs, report):
                for index, job in enumerate(jobs):
                    try:
                        job()
                    except Exception as exc:
                        report(index, exc)

    def _together_ran(
        self, jobs: Sequence[Callable[[], object]], report: Callable[[int, Exception], None]
    ) -> bool:
        """Whether `jobs` ran and committed as one transaction (`together`)."""
        try:
            self._retrying(lambda: self._conn.execute("BEGIN IMMEDIATE"))
        except sqlite3.Error:
            log.warning("could not start a batch's transaction; its writes go one at a time", exc_info=True)
            return False
        self._together = True
        try:
            for index, job in enumerate(jobs):
                try:
                    self._savepoint(job)
                except Exception as exc:
                    if not self._conn.in_transaction:
                        log.warning("SQLite ended a batch's transaction; its writes go one at a time")
                        return False
                    report(index, exc)
            self._conn.execute("COMMIT")
            return True
        except sqlite3.Error:
            log.warning("could not commit a batch; its writes go one at a time", exc_info=True)
            return False
        finally:
            self._together = False
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

    def _savepoint(self, job: Callable[[], object]) -> None:
        """`job` inside the batch's open transaction, its writes undone alone if it raises."""
        self._conn.execute("SAVEPOINT job")
        try:
            job()
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK TO job")
                self._conn.execute("RELEASE job")
            raise
        self._conn.execute("RELEASE job")

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

        with self._lock:
            if self._together:  # a job of a batch: inside the job's savepoint, committed with the batch
                return work(self._conn)
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
