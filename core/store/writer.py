"""What a turn writes to the session store, and how: the session record, SQLite write
transactions, and each live session's queue that runs them off the event loop, in order.
Everything a plain prompt does to the store is here, so a turn runs this one module of
it; opening the file and the rarer jobs are in `sessions`.

Writes are short `BEGIN IMMEDIATE` transactions on one file (WAL mode) shared by every
hermes-acp process on the machine, retried with jitter when another process holds the
lock past the busy timeout; each is committed when its method returns, so a killed
process loses nothing it reported as stored (`synchronous=NORMAL`: only an OS crash or
power loss can drop the last few).

A turn must not wait for SQLite between two streamed chunks: a session's `Persister`
queues its writes on the event loop's `WriteQueue`, whose one worker runs them in a
thread, every session's that piled up in one hop; `flush()` waits until all the session
queued so far are on disk (the manager calls it before it answers a prompt). A session's
record is created with its first message, so sessions never prompted leave nothing
behind; nothing is written once it is closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sqlite3
import threading
import time
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from hermes_core.messages import Message
    from hermes_core.models import Usage
    from hermes_core.store.sessions import LiveSession, SessionStore

log = logging.getLogger(__name__)

T = TypeVar("T")


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
_UPDATABLE_FIELDS = frozenset(RECORD_FIELDS) - {"id", "message_count", "compacted_into", "replay_from"}
MESSAGE_COLUMNS = (
    "role, content, tool_calls, tool_call_id, name, reasoning, finish_reason, "
    "provider_data, display, is_error"
)


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


# --- rows ---------------------------------------------------------------------------------


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
    values = [_encode_field(name, getattr(record, name)) for name in RECORD_FIELDS]
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


def _encode_field(name: str, value: Any) -> Any:
    return json.dumps(value) if name in JSON_FIELDS else value


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc).lower()
    return "locked" in message or "busy" in message


# --- a live session's writes ----------------------------------------------------------------

Write = Callable[["SessionStore"], Any]


class Persister:
    """One session's writes, run in order off the event loop (by the loop's `WriteQueue`)."""

    def __init__(self, session_id: str, open_store: Callable[[], Awaitable[SessionStore]]) -> None:
        self.session_id = session_id
        self._open_store = open_store
        self._store: SessionStore | None = None  # once opened: a turn's writes skip the opener
        self._queued = 0  # submitted, not yet run
        self._idle = asyncio.Event()
        self._idle.set()

    def submit(self, write: Write) -> None:
        self._queued += 1
        self._idle.clear()
        WriteQueue.of_running_loop().put(self, write)

    async def flush(self) -> None:
        # shielded: a cancelled caller must not cancel writes other callers wait for
        await asyncio.shield(self._idle.wait())

    async def store(self) -> SessionStore:
        if self._store is None:
            self._store = await self._open_store()
        return self._store

    def ran(self, count: int) -> None:
        self._queued -= count
        if not self._queued:
            self._idle.set()


class WriteQueue:
    """The writes of every live session of an event loop, run by one worker: all that
    piled up while the previous batch ran go to the thread in one hop, in the order they
    were submitted. Fifty sessions writing at once make a few hops, not one each (the
    store is one connection behind a lock: more threads would only queue on it)."""

    _by_loop: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WriteQueue]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        self._pending: list[tuple[Persister, Write]] = []
        self._worker: asyncio.Task[None] | None = None

    @classmethod
    def of_running_loop(cls) -> WriteQueue:
        loop = asyncio.get_running_loop()
        queue = cls._by_loop.get(loop)
        if queue is None:
            queue = cls._by_loop[loop] = cls()
        return queue

    def put(self, persister: Persister, write: Write) -> None:
        self._pending.append((persister, write))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run(), name="persist sessions")

    async def _run(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            counts = Counter(persister for persister, _ in batch)
            try:
                stores = {persister: await self._store_of(persister) for persister in counts}
                runnable = [
                    (store, p.session_id, write) for p, write in batch if (store := stores[p]) is not None
                ]
                await asyncio.to_thread(_apply, runnable)
            finally:
                for persister, count in counts.items():
                    persister.ran(count)

    @staticmethod
    async def _store_of(persister: Persister) -> SessionStore | None:
        try:
            return await persister.store()
        except Exception:
            log.exception("could not store session %s; its queued write(s) are lost", persister.session_id)
            return None


def _apply(batch: list[tuple[SessionStore, str, Write]]) -> None:
    for store, session_id, write in batch:
        try:
            write(store)
        except Exception:
            log.exception("a write for session %s failed", session_id)


def store_session(session: LiveSession) -> None:
    """Queue the creation of the session's record, if the store has none yet: a session
    exists from its creation on (a client may resume it from another process before it
    was ever prompted)."""
    if session.closed or session.stored:
        return
    record = new_record(session)
    session.stored = True
    session.persister.submit(lambda store: store.create_session(record))


def persist(session: LiveSession, write: Write) -> None:
    """Queue a write, creating the session's record first if the store has none yet."""
    if session.closed:
        return
    store_session(session)
    session.persister.submit(write)


def persist_message(session: LiveSession, message: Message) -> None:
    persist(session, lambda store: store.append_message(session.id, message))


def save_record(session: LiveSession, *, force: bool = False, **changes: Any) -> None:
    """Record fields changed. A session not stored yet gets them when it is created
    (with its first message), unless `force`."""
    if session.closed:
        return
    if session.stored:
        session.persister.submit(lambda store: store.update_session(session.id, **changes))
    elif force:
        persist(session, lambda store: store.update_session(session.id, **changes))


def save_turn_state(session: LiveSession) -> None:
    """What a turn changes besides the history: usage, cost, "always" answers, the plan."""
    if not session.stored:
        return
    agent = session.agent
    save_record(
        session,
        **usage_fields(agent.usage_total, agent.cost_usd),
        approvals=agent.approvals.stored,
        plan=[
            {"content": e.content, "status": e.status, "priority": e.priority} for e in agent.tool_state.plan
        ],
    )


def usage_fields(usage: Usage, cost_usd: float | None) -> dict[str, Any]:
    """The record's usage columns from an agent's (or a subagent's) usage."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "cost_usd": cost_usd,
    }


def new_record(session: LiveSession) -> SessionRecord:
    agent = session.agent
    return SessionRecord(
        id=session.id,
        cwd=session.cwd,
        extra_dirs=list(session.extra_dirs),
        title=getattr(agent, "title", None),
        created_at=session.created,
        mode=agent.mode.value,
        model=session.model,
        reasoning_effort=agent.reasoning_effort,
        approvals=agent.approvals.stored,
        system_prompt=agent.system_prompt,
    )
