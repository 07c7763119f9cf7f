"""The write queue a live session persists through: order, one open, failures contained."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes_core.messages import Message
from hermes_core.store.sessions import SessionStore
from hermes_core.store.writer import Persister, SessionRecord


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "sessions.db") as opened:
        yield opened


def append(text: str) -> Callable[[SessionStore], int]:
    return lambda store: store.append_message("s1", Message(role="user", content=text))


def writing_to(store: SessionStore, session_id: str = "s1") -> Persister:
    """A Persister for `session_id` whose store, once asked for, is `store`."""

    async def open_store() -> SessionStore:
        return store

    return Persister(session_id, open_store)


def submit_a_session_and_a_failing_write(persister: Persister) -> None:
    persister.submit(lambda s: s.create_session(SessionRecord(id="s1", cwd="/work")))
    persister.submit(lambda s: s.append_message("no-such-session", Message(role="user", content="x")))


async def test_queued_writes_land_in_order_and_the_store_is_opened_once(store: SessionStore) -> None:
    opens = 0

    async def open_store() -> SessionStore:
        nonlocal opens
        opens += 1
        return store

    persister = Persister("s1", open_store)
    persister.submit(lambda s: s.create_session(SessionRecord(id="s1", cwd="/work")))
    for n in range(30):
        persister.submit(append(f"m{n}"))
    await persister.flush()
    for n in range(30, 40):  # a second burst, after the worker went idle
        persister.submit(append(f"m{n}"))
    await persister.flush()

    assert [m.text for m in store.load_messages("s1")] == [f"m{n}" for n in range(40)]
    assert opens == 1


async def test_a_failing_write_is_logged_and_the_ones_after_it_still_land(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    persister = writing_to(store)
    submit_a_session_and_a_failing_write(persister)
    persister.submit(append("after the failure"))
    with caplog.at_level(logging.ERROR, logger="hermes_core.store.writer"):
        await persister.flush()

    assert [m.text for m in store.load_messages("s1")] == ["after the failure"]
    assert "a write for session s1 failed" in caplog.text


async def test_a_store_that_cannot_open_loses_that_batch_and_is_tried_again(store: SessionStore) -> None:
    attempts = 0

    async def open_store() -> SessionStore:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise OSError("disk gone")
        return store

    persister = Persister("s1", open_store)
    persister.submit(lambda s: s.create_session(SessionRecord(id="lost", cwd="/work")))
    await persister.flush()
    persister.submit(lambda s: s.create_session(SessionRecord(id="s1", cwd="/work")))
    persister.submit(append("kept"))
    await persister.flush()

    assert store.get_session("lost") is None
    assert [m.text for m in store.load_messages("s1")] == ["kept"]


async def test_many_sessions_writing_at_once_each_keep_their_order(store: SessionStore) -> None:
    persisters = [writing_to(store, f"s{n}") for n in range(20)]
    for persister in persisters:
        record = SessionRecord(id=persister.session_id, cwd="/work")
        persister.submit(lambda s, record=record: s.create_session(record))
    for turn in range(10):  # interleaved, as concurrent turns write
        for persister in persisters:
            message = Message(role="user", content=f"{persister.session_id} m{turn}")
            persister.submit(lambda s, sid=persister.session_id, m=message: s.append_message(sid, m))
    await asyncio.gather(*(persister.flush() for persister in persisters))

    for persister in persisters:
        texts = [m.text for m in store.load_messages(persister.session_id)]
        assert texts == [f"{persister.session_id} m{turn}" for turn in range(10)]


async def test_a_session_whose_store_cannot_open_loses_only_its_own_writes(store: SessionStore) -> None:
    async def broken_store() -> SessionStore:
        raise OSError("disk gone")

    healthy, broken = writing_to(store), Persister("s2", broken_store)
    healthy.submit(lambda s: s.create_session(SessionRecord(id="s1", cwd="/work")))
    broken.submit(lambda s: s.create_session(SessionRecord(id="s2", cwd="/work")))
    healthy.submit(append("kept"))
    await asyncio.gather(healthy.flush(), broken.flush())

    assert store.get_session("s2") is None
    assert [m.text for m in store.load_messages("s1")] == ["kept"]


async def test_after_flush_the_writes_are_committed_for_every_other_connection(
    store: SessionStore, tmp_path: Path
) -> None:
    persister = writing_to(store)
    submit_a_session_and_a_failing_write(persister)
    for n in range(5):
        persister.submit(append(f"m{n}"))
    await persister.flush()

    with SessionStore(tmp_path / "sessions.db") as other:  # another process's view
        assert [m.text for m in other.load_messages("s1")] == [f"m{n}" for n in range(5)]
    store.update_session("s1", title="still writable")  # no transaction left open
    assert store.get_session("s1").title == "still writable"
