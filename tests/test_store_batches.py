"""The live sessions' writes that pile up go to SQLite as one transaction: one commit for
the batch, each write undone alone when it fails, and a process killed meanwhile loses
the whole batch (whose writes nobody was told were stored), never half of it."""

from __future__ import annotations

import asyncio
import logging
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.messages import Message
from hermes_core.store.sessions import SessionStore
from hermes_core.store.writer import Persister, SessionRecord


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "sessions.db") as opened:
        yield opened


def writing_to(store: SessionStore, session_id: str) -> Persister:
    async def open_store() -> SessionStore:
        return store

    return Persister(session_id, open_store)


def texts(store: SessionStore, session_id: str) -> list[str]:
    return [m.text for m in store.load_messages(session_id)]


async def test_fifty_sessions_writes_that_piled_up_are_committed_once(store: SessionStore) -> None:
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    persisters = [writing_to(store, f"s{n}") for n in range(50)]
    for persister in persisters:  # all before the queue's worker runs: one batch
        sid = persister.session_id
        persister.submit(lambda s, sid=sid: s.create_session(SessionRecord(id=sid, cwd="/work")))
        for turn in range(4):
            message = Message(role="user", content=f"{sid} m{turn}")
            persister.submit(lambda s, sid=sid, m=message: s.append_message(sid, m))
    await asyncio.gather(*(persister.flush() for persister in persisters))
    store._conn.set_trace_callback(None)

    assert statements.count("COMMIT") == 1
    for persister in persisters:
        assert texts(store, persister.session_id) == [f"{persister.session_id} m{turn}" for turn in range(4)]


async def test_a_failing_write_in_a_batch_is_undone_alone(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    def half_then_fails(s: SessionStore) -> None:
        s.append_message("s1", Message(role="user", content="half of a failed write"))
        raise ValueError("the rest could not be written")

    persister = writing_to(store, "s1")
    persister.submit(lambda s: s.create_session(SessionRecord(id="s1", cwd="/work")))
    persister.submit(lambda s: s.append_message("s1", Message(role="user", content="before")))
    persister.submit(half_then_fails)
    persister.submit(lambda s: s.append_message("s1", Message(role="user", content="after")))
    with caplog.at_level(logging.ERROR, logger="hermes_core.store.writer"):
        await persister.flush()

    assert texts(store, "s1") == ["before", "after"]
    assert caplog.text.count("a write for session s1 failed") == 1


async def test_when_sqlite_ends_a_batch_its_writes_run_again_one_at_a_time(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    # A full disk or an I/O error makes SQLite roll the whole transaction back: what the
    # batch wrote before it is gone, so every write is made again in its own transaction.
    ended = False

    def ends_the_transaction(s: SessionStore) -> None:
        nonlocal ended
        if not ended:
            ended = True
            s._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")

    persister = writing_to(store, "s1")
    persister.submit(lambda s: s.create_session(SessionRecord(id="s1", cwd="/work")))
    persister.submit(lambda s: s.append_message("s1", Message(role="user", content="before")))
    persister.submit(ends_the_transaction)
    persister.submit(lambda s: s.append_message("s1", Message(role="user", content="after")))
    with caplog.at_level(logging.WARNING, logger="hermes_core.store"):
        await persister.flush()

    assert texts(store, "s1") == ["before", "after"]
    assert "its writes go one at a time" in caplog.text
    store.update_session("s1", title="still writable")  # no transaction left open
    assert store.get_session("s1").title == "still writable"


KILLED_MID_BATCH = """
import functools, os, signal, sys
from hermes_core.messages import Message
from hermes_core.store.records import SessionRecord
from hermes_core.store.sessions import SessionStore
store = SessionStore(sys.argv[1])
store.create_session(SessionRecord(id="s1", cwd="/work"))
store.append_message("s1", Message(role="user", content="stored before the batch"))
store.together(
    [
        functools.partial(store.append_message, "s1", Message(role="user", content="in the batch")),
        functools.partial(store.create_session, SessionRecord(id="s2", cwd="/work")),
        functools.partial(os.kill, os.getpid(), signal.SIGKILL),
    ],
    lambda index, exc: None,
)
"""


def test_a_process_killed_mid_batch_loses_the_whole_batch_and_nothing_before_it(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    ran = subprocess.run([sys.executable, "-c", KILLED_MID_BATCH, str(path)], capture_output=True, timeout=60)
    assert ran.returncode == -signal.SIGKILL, ran.stderr.decode()

    with SessionStore(path) as after:
        assert texts(after, "s1") == ["stored before the batch"]
        assert after.get_session("s2") is None
        after.append_message("s1", Message(role="user", content="written after the crash"))
        assert texts(after, "s1") == ["stored before the batch", "written after the crash"]
