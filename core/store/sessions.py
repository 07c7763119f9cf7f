"""`SessionStore`: the session store opened, and everything besides a turn's own writes
(those are `writer`'s): listing, loading, forking and deleting sessions, compression's
archives and the transcript across them, search; and what a stored record gives back
to a restored agent.

The API is synchronous and thread-safe (one connection behind a lock); async callers
wrap it in `asyncio.to_thread`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hermes_core.events import PlanEntry
from hermes_core.messages import Message
from hermes_core.models import Usage
from hermes_core.store.connection import DEFAULT_RETRIES, Retries, SessionWriter
from hermes_core.store.records import (
    MESSAGE_COLUMNS,
    RECORD_FIELDS,
    SessionRecord,
    insert_messages,
    insert_session,
    message_values,
    next_timestamp,
    record_values,
)
from hermes_core.store.schema import check_version, migrate, row_to_message, row_to_record
from hermes_core.store.search import SearchHit, search_messages

log = logging.getLogger(__name__)

T = TypeVar("T")


class SessionStore(SessionWriter):
    def __init__(self, path: Path, retries: Retries = DEFAULT_RETRIES) -> None:
        super().__init__(path, retries)
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(retries.busy_timeout * 1000)}")
            check_version(self._conn.execute("PRAGMA user_version").fetchone()[0], self.path)
            self._retrying(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._write(lambda conn: migrate(conn, self.path))
        except BaseException:
            self._conn.close()
            raise

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._retrying(lambda: work(self._conn))

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._read(lambda conn: _select_record(conn, session_id))

    def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        include_empty: bool = False,
    ) -> tuple[list[SessionRecord], str | None]:
        """A page of sessions, most recently active first, and the cursor of the next page.

        The cursor is the (updated_at, id) of the page's last session, so later pages
        continue below it however many sessions are created or bumped meanwhile.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        # Archives and subagents' transcripts are history, not sessions to open.
        conditions: list[str] = ["compacted_into IS NULL", "json_extract(config, '$.subagent') IS NULL"]
        params: list[Any] = []
        if cwd is not None:
            conditions.append("cwd = ?")
            params.append(cwd)
        if not include_empty:
            conditions.append("message_count > 0")
        if cursor is not None:
            after_updated, after_id = _decode_cursor(cursor)
            conditions.append("(updated_at < ? OR (updated_at = ? AND id < ?))")
            params += [after_updated, after_updated, after_id]
        sql = (
            f"SELECT {', '.join(RECORD_FIELDS)} FROM sessions WHERE {' AND '.join(conditions)} "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        # One row more than asked tells whether another page exists.
        rows = self._read(lambda conn: conn.execute(sql, (*params, limit + 1)).fetchall())
        records = [row_to_record(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = records[-1]
            next_cursor = _encode_cursor(last.updated_at, last.id)
        return records, next_cursor

    def fork_session(self, session_id: str, new_id: str, *, cwd: str | None = None) -> SessionRecord:
        """A copy of the session and its history under `new_id`, with parent_id = the source."""

        def write(conn: sqlite3.Connection) -> SessionRecord:
            source = _existing_record(conn, session_id)
            now = next_timestamp(conn)
            fork = SessionRecord(
                **{
                    **record_values(source),
                    "id": new_id,
                    "parent_id": session_id,
                    "replay_from": 0,  # the fork replays its own copy, compressed or not
                    "cwd": source.cwd if cwd is None else cwd,
                    "created_at": now,
                    "updated_at": now,
                }
            )
            insert_session(conn, fork)
            conn.execute(
                f"""
                INSERT INTO messages (session_id, seq, {MESSAGE_COLUMNS}, created_at, search_text)
                SELECT ?, seq, {MESSAGE_COLUMNS}, created_at, search_text
                FROM messages WHERE session_id = ? ORDER BY seq
                """,
                (new_id, session_id),
            )
            return fork

        return self._write(write)

    def delete_session(self, session_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            # Explicit rather than left to ON DELETE CASCADE, so the FTS triggers run
            # even on a connection that forgot `PRAGMA foreign_keys`.
            conn.execute(
                "DELETE FROM messages WHERE session_id = ? OR session_id IN "
                "(SELECT id FROM sessions WHERE compacted_into = ?)",
                (session_id, session_id),
            )
            conn.execute("DELETE FROM sessions WHERE compacted_into = ?", (session_id,))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

        return self._write(write)

    def load_messages(self, session_id: str) -> list[Message]:
        rows = self._read(
            lambda conn: conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        )
        return [row_to_message(row) for row in rows]

    def replace_messages(self, session_id: str, messages: list[Message]) -> str:
        """Swap the history the model sees (a compression rewrote it; seqs restart at 0).
        The old history is kept, moved into an archive session that becomes the live
        one's parent: it stays searchable and `load_transcript` still shows it. Returns
        the archive's id."""
        values = [message_values(message) for message in messages]

        def write(conn: sqlite3.Connection) -> str:
            live = _existing_record(conn, session_id)
            now = next_timestamp(conn)
            archive_id = f"{session_id}~{now:.6f}"
            archive = SessionRecord(**{**record_values(live), "id": archive_id, "compacted_into": session_id})
            insert_session(conn, archive)
            conn.execute("UPDATE messages SET session_id = ? WHERE session_id = ?", (archive_id, session_id))
            conn.execute(
                "UPDATE sessions SET updated_at = ?, message_count = ?, parent_id = ?, replay_from = ? "
                "WHERE id = ?",
                (now, len(values), archive_id, len(values), session_id),
            )
            insert_messages(conn, session_id, enumerate(values), now)
            return archive_id

        return self._write(write)

    def cut_history(self, session_id: str, prompt_id: str) -> bool:
        """Drop the history from the prompt marked `prompt_id` on (a rewind; the caller
        forked the session first). False when no stored message carries the mark."""

        def write(conn: sqlite3.Connection) -> bool:
            found = conn.execute(
                "SELECT MIN(seq) FROM messages WHERE session_id = ? AND role = 'user' "
                "AND json_extract(display, '$.prompt') = ?",
                (session_id, prompt_id),
            ).fetchone()
            if found is None or found[0] is None:
                return False
            conn.execute("DELETE FROM messages WHERE session_id = ? AND seq >= ?", (session_id, found[0]))
            conn.execute(
                "UPDATE sessions SET updated_at = ?, message_count = "
                "(SELECT COUNT(*) FROM messages WHERE session_id = ?) WHERE id = ?",
                (next_timestamp(conn), session_id, session_id),
            )
            return True

        return self._write(write)

    def load_transcript(self, session_id: str) -> list[Message]:
        """The whole conversation as the user saw it, across compressions: each archive's
        history, then what came after the compression that replaced it."""

        def read(conn: sqlite3.Connection) -> list[Any]:
            pieces: list[list[Any]] = []
            current: str | None = session_id
            while current is not None:
                found = conn.execute(
                    "SELECT parent_id, replay_from, compacted_into FROM sessions WHERE id = ?", (current,)
                ).fetchone()
                if found is None:
                    if current == session_id:
                        raise KeyError(session_id)
                    break  # an archive went missing: fall back to the compressed copies below
                parent, replay_from, compacted_into = found
                if current != session_id and compacted_into != session_id:
                    break  # not this session's archive (a fork's source): its copies stand
                archived = conn.execute(
                    "SELECT 1 FROM sessions WHERE id = ? AND compacted_into = ?", (parent, session_id)
                ).fetchone()
                start = replay_from if archived else 0
                pieces.append(
                    conn.execute(
                        f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq >= ? "
                        "ORDER BY seq",
                        (current, start),
                    ).fetchall()
                )
                current = parent if archived else None
            return [row for piece in reversed(pieces) for row in piece]

        return [row_to_message(row) for row in self._read(read)]

    def search(
        self,
        query: str,
        *,
        cwd: str | None = None,
        limit: int = 20,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """Messages matching every word of the query, best first (see `search`)."""
        return search_messages(self._read, query, cwd, limit, exclude_session)


def _select_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(
        f"SELECT {', '.join(RECORD_FIELDS)} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return row_to_record(row) if row else None


def _existing_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    record = _select_record(conn, session_id)
    if record is None:
        raise KeyError(session_id)
    return record


def _encode_cursor(updated_at: float, session_id: str) -> str:
    raw = json.dumps([updated_at, session_id]).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8"))
    except (ValueError, UnicodeError, binascii.Error) as exc:
        raise ValueError("invalid cursor") from exc
    if (
        not isinstance(decoded, list)
        or len(decoded) != 2
        or not isinstance(decoded[0], int | float)
        or isinstance(decoded[0], bool)
        or not isinstance(decoded[1], str)
    ):
        raise ValueError("invalid cursor")
    return float(decoded[0]), decoded[1]


def restored_plan(record: SessionRecord) -> tuple[PlanEntry, ...]:
    """The plan a stored record remembers (malformed entries left out)."""
    entries = []
    for item in record.plan or []:
        try:
            entries.append(
                PlanEntry(item["content"], item.get("status", "pending"), item.get("priority", "medium"))
            )
        except (KeyError, TypeError):
            log.warning("session %s: skipping a malformed plan entry %r", record.id, item)
    return tuple(entries)


def restored_usage(record: SessionRecord) -> Usage:
    """What the session spent so far, as its record remembers it."""
    return Usage(
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cached_tokens=record.cached_tokens,
    )
