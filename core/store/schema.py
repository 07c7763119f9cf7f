"""The session store's file format: its tables, the migrations that build them, and
how stored rows read back.

`PRAGMA user_version` is the schema version: a file is brought up to `SCHEMA_VERSION`
by the migrations it has not had yet, in order, inside one write transaction. Old files
(v1, v2) keep working; a newer file than this code knows is refused
(`SchemaVersionError`), never rewritten.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core.errors import HermesError
from hermes_core.messages import Message
from hermes_core.store.records import (
    JSON_FIELDS,
    MESSAGE_COLUMNS,
    RECORD_FIELDS,
    SessionRecord,
    search_text,
)

log = logging.getLogger(__name__)


class StoreError(HermesError):
    pass


class SchemaVersionError(StoreError):
    """The file was written by a newer hermes-acp than this one."""


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
    rows = conn.execute(f"SELECT id, {MESSAGE_COLUMNS} FROM messages").fetchall()
    conn.executemany(
        "UPDATE messages SET search_text = ? WHERE id = ?",
        [(search_text(row_to_message(row[1:])), row[0]) for row in rows],
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


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the file up to SCHEMA_VERSION; run inside a write transaction."""
    # Read inside the write lock: another process may have just migrated.
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    check_version(version, path)
    for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
        log.info("upgrading %s to schema version %d", path, number)
        migration(conn)
    if version != SCHEMA_VERSION:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def check_version(version: int, path: Path) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has session-store schema version {version}, but this hermes-acp "
            f"only knows versions up to {SCHEMA_VERSION}; it was written by a newer "
            "hermes-acp, so upgrade hermes-acp (or point HERMES_ACP_HOME elsewhere)"
        )


def row_to_record(row: tuple[Any, ...]) -> SessionRecord:
    values = {
        name: json.loads(value) if name in JSON_FIELDS else value
        for name, value in zip(RECORD_FIELDS, row, strict=True)
    }
    return SessionRecord(**values)


def row_to_message(row: tuple[Any, ...]) -> Message:
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
