"""A session's record and its messages as rows: the shapes every part of the store shares.

`SessionRecord` is the `sessions` table's row; `SessionSnapshot` is what a live session
hands the store to keep besides its history (the store reads nothing else of it).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.messages import Message
    from hermes_core.models import Usage


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


RECORD_FIELDS = tuple(f.name for f in fields(SessionRecord))
JSON_FIELDS = frozenset({"extra_dirs", "approvals", "plan", "config"})
# message_count follows the messages themselves; id is the key; lineage is the store's.
UPDATABLE_FIELDS = frozenset(RECORD_FIELDS) - {"id", "message_count", "compacted_into", "replay_from"}
MESSAGE_COLUMNS = (
    "role, content, tool_calls, tool_call_id, name, reasoning, finish_reason, "
    "provider_data, display, is_error"
)


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    """What a live session's record keeps besides its history, as the session gives it."""

    title: str | None
    mode: str
    model: str
    reasoning_effort: str | None
    approvals: dict[str, Any]
    system_prompt: str
    usage: Usage
    cost_usd: float | None
    plan: list[dict[str, str]]


def next_timestamp(conn: sqlite3.Connection) -> float:
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


def record_values(record: SessionRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in RECORD_FIELDS}


def insert_session(conn: sqlite3.Connection, record: SessionRecord) -> None:
    values = [encode_field(name, getattr(record, name)) for name in RECORD_FIELDS]
    placeholders = ", ".join("?" for _ in RECORD_FIELDS)
    try:
        conn.execute(f"INSERT INTO sessions ({', '.join(RECORD_FIELDS)}) VALUES ({placeholders})", values)
    except sqlite3.IntegrityError as exc:
        raise ValueError(f"session {record.id!r} already exists") from exc


def message_values(message: Message) -> tuple[Any, ...]:
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
        search_text(message),
    )


def insert_messages(
    conn: sqlite3.Connection, session_id: str, rows: Iterable[tuple[int, tuple[Any, ...]]], now: float
) -> None:
    conn.executemany(
        f"""
        INSERT INTO messages (session_id, seq, {MESSAGE_COLUMNS}, search_text, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [(session_id, seq, *values, now) for seq, values in rows],
    )


def search_text(message: Message) -> str:
    """What full-text search sees of a message: its text and the tool calls it made."""
    pieces = [message.text]
    for call in message.tool_calls:
        pieces += [call.name, call.arguments]
    # A lone surrogate (possible in decoded model output) cannot be stored as UTF-8 text.
    return "\n".join(pieces).encode("utf-8", "replace").decode("utf-8")


def encode_field(name: str, value: Any) -> Any:
    return json.dumps(value) if name in JSON_FIELDS else value


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def usage_fields(usage: Usage, cost_usd: float | None) -> dict[str, Any]:
    """The record's usage columns from an agent's (or a subagent's) usage."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "cost_usd": cost_usd,
    }
