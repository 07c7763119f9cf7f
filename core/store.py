"""The SQLite session store: session records, their message history, full-text search.

One file (WAL mode) shared by every hermes-acp process on the machine. Writes are
short `BEGIN IMMEDIATE` transactions, retried with jitter when another process holds
the lock longer than the busy timeout; each one is committed when its method returns,
so a killed process loses nothing it reported as stored. (`synchronous=NORMAL` keeps
commits safe against a process crash; only an OS crash or power loss can drop the
last few.)

The API is synchronous and thread-safe (one connection behind a lock); async callers
wrap it in `asyncio.to_thread`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from core.errors import HermesError
from core.messages import Message

logger = logging.getLogger(__name__)

T = TypeVar("T")


class StoreError(HermesError):
    pass


class SchemaVersionError(StoreError):
    """The file was written by a newer hermes-acp than this one."""


@dataclass(slots=True)
class SessionRecord:
    id: str
    cwd: str
    extra_dirs: list[str] = field(default_factory=list)
    parent_id: str | None = None  # the session this one was forked or compressed from
    title: str | None = None
    created_at: float = 0
    updated_at: float = 0
    mode: str = "ask"
    model: str = ""
    reasoning_effort: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    approvals: dict[str, Any] = field(default_factory=dict)
    plan: list[Any] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    message_count: int = 0
    # Fixed when the session starts and given back on every restore, so the providers'
    # prompt caches keep hitting across load and resume (None: written before v3).
    system_prompt: str | None = None
    # Compression lineage. A compression moves the history it replaced into an archive
    # session (compacted_into = the live session, hidden from listings) and makes it the
    # live session's parent; the live history's first `replay_from` messages are the
    # compression's output, replayed from the archive as the user saw them.
    compacted_into: str | None = None
    replay_from: int = 0


@dataclass(frozen=True, slots=True)
class SearchHit:
    session_id: str
    title: str | None
    seq: int
    role: str
    snippet: str  # matched words wrapped in **...**
    updated_at: float  # the session's last activity


_RECORD_FIELDS = tuple(f.name for f in fields(SessionRecord))
_JSON_FIELDS = frozenset({"extra_dirs", "approvals", "plan", "config"})
# message_count follows the messages themselves; id is the key; lineage is the store's.
_UPDATABLE_FIELDS = frozenset(_RECORD_FIELDS) - {"id", "message_count", "compacted_into", "replay_from"}
_MESSAGE_COLUMNS = (
    "role, content, tool_calls, tool_call_id, name, reasoning, finish_reason, "
    "provider_data, display, is_error"
)


# --- schema -------------------------------------------------------------------------------


def _migrate_v1_tables(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            parent_id TEXT,
            cwd TEXT NOT NULL,
            extra_dirs TEXT NOT NULL DEFAULT '[]',
            title TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            mode TEXT NOT NULL DEFAULT 'ask',
            model TEXT NOT NULL DEFAULT '',
            reasoning_effort TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cached_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL,
            approvals TEXT NOT NULL DEFAULT '{}',
            plan TEXT NOT NULL DEFAULT '[]',
            config TEXT NOT NULL DEFAULT '{}',
            message_count INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    conn.execute("CREATE INDEX sessions_by_recency ON sessions (updated_at, id)")
    conn.execute("CREATE INDEX sessions_by_cwd_recency ON sessions (cwd, updated_at, id)")
    conn.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            reasoning TEXT,
            finish_reason TEXT,
            provider_data TEXT,
            display TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        )
        """
    )
    conn.execute("CREATE UNIQUE INDEX messages_by_session_seq ON messages (session_id, seq)")


def _migrate_v2_search(conn: sqlite3.Connection) -> None:
    # External-content FTS over a text column kept next to the message: triggers keep
    # the index in step with every insert, delete and update, whoever makes them.
    conn.execute("ALTER TABLE messages ADD COLUMN search_text TEXT NOT NULL DEFAULT ''")
    rows = conn.execute(f"SELECT id, {_MESSAGE_COLUMNS} FROM messages").fetchall()
    conn.executemany(
        "UPDATE messages SET search_text = ? WHERE id = ?",
        [(_search_text(_row_to_message(row[1:])), row[0]) for row in rows],
    )
    conn.execute(
        """
        CREATE VIRTUAL TABLE messages_fts USING fts5 (
            search_text, content = 'messages', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )
        """
    )
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    conn.execute(
        """
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts (rowid, search_text) VALUES (new.id, new.search_text);
        END
        """
    )
    conn.execute(
        """
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, search_text)
                VALUES ('delete', old.id, old.search_text);
        END
        """
    )
    conn.execute(
        """
        CREATE TRIGGER messages_fts_update AFTER UPDATE OF search_text ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, search_text)
                VALUES ('delete', old.id, old.search_text);
            INSERT INTO messages_fts (rowid, search_text) VALUES (new.id, new.search_text);
        END
        """
    )


def _migrate_v3_prompt_and_lineage(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE sessions ADD COLUMN system_prompt TEXT")
    conn.execute("ALTER TABLE sessions ADD COLUMN compacted_into TEXT")
    conn.execute("ALTER TABLE sessions ADD COLUMN replay_from INTEGER NOT NULL DEFAULT 0")
    # Partial: a full index would lure the planner into serving `compacted_into IS NULL`
    # (every listing) from it and sorting, 15x slower than walking the recency index.
    conn.execute(
        "CREATE INDEX sessions_by_live_session ON sessions (compacted_into) WHERE compacted_into IS NOT NULL"
    )


# Applied in order; after MIGRATIONS[i] the file is at schema version i + 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_v1_tables,
    _migrate_v2_search,
    _migrate_v3_prompt_and_lineage,
)
SCHEMA_VERSION = len(MIGRATIONS)


# --- the store ----------------------------------------------------------------------------


class SessionStore:
    def __init__(
        self,
        path: Path,
        *,
        busy_timeout: float = 5.0,
        max_retries: int = 8,
        retry_base_seconds: float = 0.02,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._max_retries = max_retries
        self._retry_base = retry_base_seconds
        # isolation_level=None: no implicit transactions; every write says BEGIN IMMEDIATE.
        self._conn = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._check_version(self._conn.execute("PRAGMA user_version").fetchone()[0])
            self._retrying(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
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

    # --- sessions ---

    def create_session(self, record: SessionRecord) -> SessionRecord:
        def write(conn: sqlite3.Connection) -> SessionRecord:
            now = _next_timestamp(conn)
            created = SessionRecord(
                **{
                    **_record_values(record),
                    "created_at": record.created_at or now,
                    "updated_at": record.updated_at or record.created_at or now,
                }
            )
            try:
                _insert_session(conn, created)
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"session {record.id!r} already exists") from exc
            return created

        return self._write(write)

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._read(lambda conn: _select_record(conn, session_id))

    def update_session(self, session_id: str, **changes: Any) -> None:
        unknown = sorted(set(changes) - _UPDATABLE_FIELDS)
        if unknown:
            raise ValueError(f"cannot update session field(s): {', '.join(unknown)}")
        if not changes:
            return
        assignments = ", ".join(f"{name} = ?" for name in changes)
        values = [_encode_field(name, value) for name, value in changes.items()]

        def write(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values, session_id))
            if cursor.rowcount == 0:
                raise KeyError(session_id)

        self._write(write)

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
            f"SELECT {', '.join(_RECORD_FIELDS)} FROM sessions WHERE {' AND '.join(conditions)} "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        # One row more than asked tells whether another page exists.
        rows = self._read(lambda conn: conn.execute(sql, (*params, limit + 1)).fetchall())
        records = [_row_to_record(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = records[-1]
            next_cursor = _encode_cursor(last.updated_at, last.id)
        return records, next_cursor

    def fork_session(self, session_id: str, new_id: str, *, cwd: str | None = None) -> SessionRecord:
        """A copy of the session and its history under `new_id`, with parent_id = the source."""

        def write(conn: sqlite3.Connection) -> SessionRecord:
            source = _existing_record(conn, session_id)
            now = _next_timestamp(conn)
            fork = SessionRecord(
                **{
                    **_record_values(source),
                    "id": new_id,
                    "parent_id": session_id,
                    "replay_from": 0,  # the fork replays its own copy, compressed or not
                    "cwd": source.cwd if cwd is None else cwd,
                    "created_at": now,
                    "updated_at": now,
                }
            )
            try:
                _insert_session(conn, fork)
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"session {new_id!r} already exists") from exc
            conn.execute(
                f"""
                INSERT INTO messages (session_id, seq, {_MESSAGE_COLUMNS}, created_at, search_text)
                SELECT ?, seq, {_MESSAGE_COLUMNS}, created_at, search_text
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

    # --- messages ---

    def append_message(self, session_id: str, message: Message) -> int:
        """Store the message at the end of the session's history; returns its seq (0-based)."""
        values = _message_values(message)

        def write(conn: sqlite3.Connection) -> int:
            now = _next_timestamp(conn)
            bumped = conn.execute(
                "UPDATE sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?",
                (now, session_id),
            )
            if bumped.rowcount == 0:
                raise KeyError(session_id)
            seq: int = conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            _insert_messages(conn, session_id, [(seq, values)], now)
            return seq

        return self._write(write)

    def load_messages(self, session_id: str) -> list[Message]:
        rows = self._read(
            lambda conn: conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        )
        return [_row_to_message(row) for row in rows]

    def replace_messages(self, session_id: str, messages: list[Message]) -> str:
        """Swap the history the model sees (a compression rewrote it; seqs restart at 0).
        The old history is kept, moved into an archive session that becomes the live
        one's parent: it stays searchable and `load_transcript` still shows it. Returns
        the archive's id."""
        values = [_message_values(message) for message in messages]

        def write(conn: sqlite3.Connection) -> str:
            live = _existing_record(conn, session_id)
            now = _next_timestamp(conn)
            archive_id = f"{session_id}~{now:.6f}"
            archive = SessionRecord(
                **{**_record_values(live), "id": archive_id, "compacted_into": session_id}
            )
            _insert_session(conn, archive)
            conn.execute("UPDATE messages SET session_id = ? WHERE session_id = ?", (archive_id, session_id))
            conn.execute(
                "UPDATE sessions SET updated_at = ?, message_count = ?, parent_id = ?, replay_from = ? "
                "WHERE id = ?",
                (now, len(values), archive_id, len(values), session_id),
            )
            _insert_messages(conn, session_id, enumerate(values), now)
            return archive_id

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
                        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq >= ? "
                        "ORDER BY seq",
                        (current, start),
                    ).fetchall()
                )
                current = parent if archived else None
            return [row for piece in reversed(pieces) for row in piece]

        return [_row_to_message(row) for row in self._read(read)]

    # --- search ---

    def search(
        self,
        query: str,
        *,
        cwd: str | None = None,
        limit: int = 20,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """Messages matching every word of the query (any word, if none matches all), best first.

        The query is plain words, as a model writes them: FTS5 syntax in it is taken
        literally, except a trailing `*` which keeps its prefix meaning.
        """
        terms = _query_terms(query)
        if not terms or limit < 1:
            return []
        hits = self._search(" ".join(terms), cwd, limit, exclude_session)
        if not hits and len(terms) > 1:
            hits = self._search(" OR ".join(terms), cwd, limit, exclude_session)
        return hits

    def _search(
        self, match: str, cwd: str | None, limit: int, exclude_session: str | None
    ) -> list[SearchHit]:
        conditions = ["messages_fts MATCH ?"]
        params: list[Any] = [match]
        if cwd is not None:  # the directory and everything below it: one repository's sessions
            root = cwd.rstrip("/") or "/"
            below = root.rstrip("/") + "/"  # compared exactly: LIKE would fold case
            conditions.append("(s.cwd = ? OR substr(s.cwd, 1, ?) = ?)")
            params += [root, len(below), below]
        if exclude_session is not None:
            conditions.append("COALESCE(s.compacted_into, s.id) != ?")
            params.append(exclude_session)
        sql = f"""
            SELECT COALESCE(s.compacted_into, s.id), s.title, m.seq, m.role,
                   snippet(messages_fts, 0, '**', '**', '…', 16), s.updated_at
            FROM messages_fts
            JOIN messages AS m ON m.id = messages_fts.rowid
            JOIN sessions AS s ON s.id = m.session_id
            WHERE {" AND ".join(conditions)}
            ORDER BY messages_fts.rank
            LIMIT ?
        """
        try:
            rows = self._read(lambda conn: conn.execute(sql, (*params, limit)).fetchall())
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc).lower():
                raise
            # Every term is quoted, so this should not happen; a model's query must
            # never turn into a failed tool call all the same.
            logger.warning("full-text query %r rejected: %s", match, exc)
            return []
        return [SearchHit(*row) for row in rows]

    # --- transactions ---

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

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._retrying(lambda: work(self._conn))

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """Run `attempt`, again after a jittered pause while the database stays locked.

        The busy timeout already waits for other writers; this covers the cases it
        does not (a lock held past the timeout, a WAL being recovered).
        """
        with self._lock:
            for tries in range(self._max_retries + 1):
                try:
                    return attempt()
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or tries == self._max_retries:
                        raise
                    pause = random.uniform(0.5, 1.5) * self._retry_base * 2**tries
                    logger.debug("database busy (%s); retrying in %.3fs", exc, pause)
                    time.sleep(pause)
            raise AssertionError("unreachable")

    def _migrate(self) -> None:
        def upgrade(conn: sqlite3.Connection) -> None:
            # Read inside the write lock: another process may have just migrated.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            self._check_version(version)
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                logger.info("upgrading %s to schema version %d", self.path, number)
                migration(conn)
            if version != SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

        self._write(upgrade)

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} has session-store schema version {version}, but this hermes-acp "
                f"only knows versions up to {SCHEMA_VERSION}; it was written by a newer "
                "hermes-acp, so upgrade hermes-acp (or point HERMES_ACP_HOME elsewhere)"
            )


# --- helpers ------------------------------------------------------------------------------


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _next_timestamp(conn: sqlite3.Connection) -> float:
    """Now, but later than every timestamp already stored.

    Called inside the write lock, so timestamps are strictly increasing across all
    processes sharing the file even when their clocks disagree; a session bumped while
    someone pages through the list can then never reappear below the cursor.
    """
    latest = conn.execute("SELECT MAX(updated_at) FROM sessions").fetchone()[0]
    now = time.time()
    if latest is not None and now <= latest:
        now = latest + 1e-6
    return now


def _select_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(
        f"SELECT {', '.join(_RECORD_FIELDS)} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return _row_to_record(row) if row else None


def _existing_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    record = _select_record(conn, session_id)
    if record is None:
        raise KeyError(session_id)
    return record


def _record_values(record: SessionRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in _RECORD_FIELDS}


def _encode_field(name: str, value: Any) -> Any:
    return json.dumps(value) if name in _JSON_FIELDS else value


def _insert_session(conn: sqlite3.Connection, record: SessionRecord) -> None:
    values = [_encode_field(name, getattr(record, name)) for name in _RECORD_FIELDS]
    placeholders = ", ".join("?" for _ in _RECORD_FIELDS)
    conn.execute(f"INSERT INTO sessions ({', '.join(_RECORD_FIELDS)}) VALUES ({placeholders})", values)


def _row_to_record(row: tuple[Any, ...]) -> SessionRecord:
    values = {
        name: json.loads(value) if name in _JSON_FIELDS else value
        for name, value in zip(_RECORD_FIELDS, row, strict=True)
    }
    return SessionRecord(**values)


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _message_values(message: Message) -> tuple[Any, ...]:
    """The message as (message columns..., search_text), from its `to_dict()` pieces."""
    data = message.to_dict()
    return (
        data["role"],
        json.dumps(data["content"]),
        _json_or_none(data.get("tool_calls")),
        data.get("tool_call_id"),
        data.get("name"),
        data.get("reasoning"),
        data.get("finish_reason"),
        _json_or_none(data.get("provider_data")),
        _json_or_none(data.get("display")),
        int(message.is_error),
        _search_text(message),
    )


def _insert_messages(
    conn: sqlite3.Connection, session_id: str, rows: Iterable[tuple[int, tuple[Any, ...]]], now: float
) -> None:
    conn.executemany(
        f"""
        INSERT INTO messages (session_id, seq, {_MESSAGE_COLUMNS}, search_text, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [(session_id, seq, *values, now) for seq, values in rows],
    )


def _row_to_message(row: tuple[Any, ...]) -> Message:
    role, content, tool_calls, tool_call_id, name, reasoning, finish_reason, provider, display, is_error = row
    data: dict[str, Any] = {"role": role, "content": json.loads(content), "is_error": bool(is_error)}
    if tool_calls is not None:
        data["tool_calls"] = json.loads(tool_calls)
    optional = {
        "tool_call_id": tool_call_id,
        "name": name,
        "reasoning": reasoning,
        "finish_reason": finish_reason,
        "provider_data": None if provider is None else json.loads(provider),
        "display": None if display is None else json.loads(display),
    }
    data.update({key: value for key, value in optional.items() if value is not None})
    return Message.from_dict(data)


def _search_text(message: Message) -> str:
    """What full-text search sees of a message: its text and the tool calls it made."""
    pieces = [message.text]
    for call in message.tool_calls:
        pieces += [call.name, call.arguments]
    # A lone surrogate (possible in decoded model output) cannot be stored as UTF-8 text.
    return "\n".join(pieces).encode("utf-8", "replace").decode("utf-8")


def _query_terms(query: str) -> list[str]:
    """The query's words as quoted FTS5 strings, so no character in it is syntax."""
    terms = []
    for word in query.split():
        if word in ("AND", "OR", "NOT", "NEAR"):
            continue  # the model meant an operator; matching "and" would only narrow
        prefix = word.endswith("*")
        word = word.rstrip("*")
        if not any(ch.isalnum() for ch in word):
            continue  # punctuation alone tokenizes to nothing
        quoted = '"' + word.replace('"', '""') + '"'
        terms.append(quoted + "*" if prefix else quoted)
    return terms


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
