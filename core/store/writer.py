"""What a turn writes to the session store, and when: each live session's queue that runs
its writes off the event loop, in order. Everything a plain prompt does to the store goes
through here; the connection and its transactions are `connection`'s, opening the file
and the rarer jobs `sessions`'.

A turn must not wait for SQLite between two streamed chunks: a session's `Persister`
queues its writes on the event loop's `WriteQueue`, whose one worker runs them in a
thread, every session's that piled up in one hop; `flush()` waits until all the session
queued so far are on disk (the manager calls it before it answers a prompt). A session's
record is created with its first message, so sessions never prompted leave nothing
behind; nothing is written once it is closed. What the record keeps besides the history
comes from the session's `snapshot()`: the store reads nothing else of it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from hermes_core.messages import Message
from hermes_core.store.records import SessionRecord, SessionSnapshot, usage_fields

if TYPE_CHECKING:
    from hermes_core.models import Usage
    from hermes_core.store.sessions import SessionStore

log = logging.getLogger(__name__)


class LiveSession(Protocol):
    """What the store needs of a live session (the protocol side's `Session`)."""

    id: str
    cwd: str
    extra_dirs: list[str]
    persister: Persister
    stored: bool  # the store has a record for it
    closed: bool  # nothing more is written
    created: float

    def snapshot(self) -> SessionSnapshot: ...


class ChildTranscript(Protocol):
    """A finished subagent, to keep as a child session (`tools.delegate.ChildReport`)."""

    @property
    def child_id(self) -> str: ...

    @property
    def parent_call_id(self) -> str: ...

    @property
    def goal(self) -> str: ...

    @property
    def messages(self) -> tuple[Message, ...]: ...

    @property
    def usage(self) -> Usage: ...

    @property
    def cost_usd(self) -> float | None: ...


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
    """The batch's writes in order, each run of them on one store as one transaction
    (`SessionWriter.together`): a write that fails is logged, the others land."""
    start = 0
    while start < len(batch):
        store = batch[start][0]
        end = start + 1
        while end < len(batch) and batch[end][0] is store:
            end += 1
        run = batch[start:end]

        def failed(index: int, exc: Exception, run: list[tuple[SessionStore, str, Write]] = run) -> None:
            log.error("a write for session %s failed", run[index][1], exc_info=exc)

        try:
            store.together([functools.partial(write, store) for _, _, write in run], failed)
        except Exception:  # the batch's rollback itself failed: the connection is broken
            log.exception("the writes of sessions %s failed", sorted({session for _, session, _ in run}))
        start = end


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
    snapshot = session.snapshot()
    save_record(
        session,
        **usage_fields(snapshot.usage, snapshot.cost_usd),
        approvals=snapshot.approvals,
        plan=snapshot.plan,
    )


def new_record(session: LiveSession) -> SessionRecord:
    snapshot = session.snapshot()
    return SessionRecord(
        id=session.id,
        cwd=session.cwd,
        extra_dirs=list(session.extra_dirs),
        title=snapshot.title,
        created_at=session.created,
        mode=snapshot.mode,
        model=snapshot.model,
        reasoning_effort=snapshot.reasoning_effort,
        approvals=snapshot.approvals,
        system_prompt=snapshot.system_prompt,
    )


# --- a live session's rarer writes ------------------------------------------------------------


def store_child(session: LiveSession, report: ChildTranscript) -> None:
    """A subagent's transcript as a child session of this one: searchable, never listed."""
    snapshot = session.snapshot()
    record = SessionRecord(
        id=report.child_id,
        cwd=session.cwd,
        extra_dirs=list(session.extra_dirs),
        parent_id=session.id,
        title=f"Subagent: {report.goal}"[:200],
        mode=snapshot.mode,
        model=snapshot.model,
        **usage_fields(report.usage, report.cost_usd),
        config={"subagent": {"parent": session.id, "toolCallId": report.parent_call_id}},
    )

    def write(store: SessionStore) -> None:
        store.create_session(record)
        for message in report.messages:
            store.append_message(report.child_id, message)

    persist(session, write)


def turn_error_notice(text: str) -> Message:
    """Why a turn failed, as a message of its history, so a reloaded session shows it. A
    notice: the model never reads it (the next turn starts as if the failed one had no answer)."""
    return Message(role="assistant", content=text, display={"notice": "turn_error"})


def replace_history(session: LiveSession, messages: list[Message]) -> None:
    persist(session, lambda store: store.replace_messages(session.id, messages))
