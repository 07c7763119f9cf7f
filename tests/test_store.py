"""The SQLite session store on real files, with real processes sharing them."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.messages import ImagePart, Message, TextPart, ToolCall
from hermes_core.store.schema import MIGRATIONS, SCHEMA_VERSION, SchemaVersionError
from hermes_core.store.sessions import SessionStore
from hermes_core.store.writer import SessionRecord

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "home" / "sessions.db"


@pytest.fixture
def store(db: Path) -> Iterator[SessionStore]:
    with SessionStore(db) as opened:
        yield opened


def every_message_shape() -> list[Message]:
    return [
        Message("user", "plain text, ünïcödé and emoji 🚀"),
        Message(
            "user",
            [TextPart("look at this"), ImagePart("image/png", "iVBORw0KGgo="), TextPart("and this")],
        ),
        Message(
            "assistant",
            "",
            tool_calls=[
                ToolCall("call_1", "read_file", '{"path": "src/main.py"}'),
                ToolCall("call_2", "run", '{"command": "pytest -q"}'),
            ],
            reasoning="I should read the file first",
            finish_reason="tool_calls",
            provider_data={"anthropic": {"thinking": [{"signature": "abc==", "n": [1, 2.5, None]}]}},
        ),
        Message(
            "tool",
            "Traceback: boom",
            tool_call_id="call_2",
            name="run",
            is_error=True,
            display={"title": "Run pytest -q", "kind": "execute", "status": "failed", "locations": []},
        ),
        Message("tool", "", tool_call_id="call_1", name="read_file"),
        Message("assistant", "Done.", finish_reason="stop"),
        Message("system", "a summary of earlier turns"),
    ]


def new_session(store: SessionStore, session_id: str, cwd: str = "/proj", **fields: object) -> SessionRecord:
    return store.create_session(SessionRecord(id=session_id, cwd=cwd, **fields))  # type: ignore[arg-type]


# --- records and messages -------------------------------------------------------------------


def test_every_message_shape_round_trips_in_order(db: Path) -> None:
    messages = every_message_shape()
    with SessionStore(db) as store:
        new_session(store, "s1")
        seqs = [store.append_message("s1", m) for m in messages]
    assert seqs == list(range(len(messages)))
    with SessionStore(db) as reopened:
        loaded = reopened.load_messages("s1")
        assert [m.to_dict() for m in loaded] == [m.to_dict() for m in messages]
        assert loaded == messages
        assert reopened.get_session("s1").message_count == len(messages)  # type: ignore[union-attr]


def test_session_record_fields_round_trip_and_update(store: SessionStore) -> None:
    created = new_session(
        store,
        "s1",
        extra_dirs=["/lib"],
        title="Fix the parser",
        mode="plan",
        model="gpt-4.1",
        reasoning_effort="high",
        approvals={"run:git status": "allow_always"},
        plan=[{"content": "read", "status": "pending"}],
        config={"mcp": ["fs"]},
        system_prompt="You are Hermes.\n- Date at session start: 2026-11-22",
    )
    assert created.created_at > 0 and created.updated_at == created.created_at
    assert store.get_session("s1") == created

    store.update_session("s1", title="Parser fixed", input_tokens=120, cost_usd=0.25, plan=[])
    updated = store.get_session("s1")
    assert updated is not None
    assert (updated.title, updated.input_tokens, updated.cost_usd, updated.plan) == (
        "Parser fixed",
        120,
        0.25,
        [],
    )
    assert updated.approvals == {"run:git status": "allow_always"}
    assert store.get_session("missing") is None


def test_update_rejects_unknown_fields_and_sessions(store: SessionStore) -> None:
    new_session(store, "s1")
    with pytest.raises(ValueError, match="colour"):
        store.update_session("s1", colour="blue")
    with pytest.raises(ValueError, match="message_count"):
        store.update_session("s1", message_count=5)
    with pytest.raises(KeyError):
        store.update_session("nope", title="x")
    with pytest.raises(KeyError):
        store.append_message("nope", Message("user", "hi"))
    with pytest.raises(ValueError, match="already exists"):
        new_session(store, "s1")


def test_append_bumps_updated_at_and_count(store: SessionStore) -> None:
    created = new_session(store, "s1")
    store.append_message("s1", Message("user", "hi"))
    after = store.get_session("s1")
    assert after is not None
    assert after.updated_at > created.updated_at
    assert after.message_count == 1


def test_activity_lists_first_even_after_a_clock_ran_ahead(store: SessionStore) -> None:
    # Another process whose clock is an hour fast wrote this session.
    new_session(store, "from-the-future")
    store.append_message("from-the-future", Message("user", "hi"))
    store.update_session("from-the-future", updated_at=time.time() + 3600)
    new_session(store, "s1")
    store.append_message("s1", Message("user", "latest"))
    assert [r.id for r in store.list_sessions()[0]] == ["s1", "from-the-future"]


def test_append_is_durable_for_a_fresh_store_on_the_same_file(db: Path) -> None:
    writer = SessionStore(db)
    new_session(writer, "s1")
    writer.append_message("s1", Message("user", "remember me"))
    # The writer stays open: the commit must be visible without closing or checkpointing.
    with SessionStore(db) as reader:
        assert [m.text for m in reader.load_messages("s1")] == ["remember me"]
    writer.close()


def test_a_compression_keeps_the_old_history_as_lineage(store: SessionStore) -> None:
    new_session(store, "s1", title="Greek")
    for word in ("alpha", "beta", "gamma"):
        store.append_message("s1", Message("user", f"talk about {word}"))
    summary = [Message("user", "Summary: we compared greek letters"), Message("assistant", "ok")]
    archive = store.replace_messages("s1", summary)

    # The model's history is the summary; seqs restart after it.
    assert store.load_messages("s1") == summary
    live = store.get_session("s1")
    assert live is not None and (live.message_count, live.parent_id, live.replay_from) == (2, archive, 2)
    assert store.append_message("s1", Message("user", "next")) == 2
    # The user's transcript is the conversation as it happened, summary left out.
    assert [m.text for m in store.load_transcript("s1")] == [
        "talk about alpha",
        "talk about beta",
        "talk about gamma",
        "next",
    ]
    # The old words stay searchable, found under the live session; the archive is no session of its own.
    assert [h.session_id for h in store.search("alpha")] == ["s1"]
    assert store.search("alpha", exclude_session="s1") == []
    assert [h.seq for h in store.search("greek")] == [0]
    assert [r.id for r in store.list_sessions()[0]] == ["s1"]
    record = store.get_session(archive)
    assert record is not None and (record.compacted_into, record.title) == ("s1", "Greek")


def test_compressions_chain_and_delete_takes_the_whole_lineage(store: SessionStore) -> None:
    new_session(store, "s1")
    store.append_message("s1", Message("user", "one"))
    store.replace_messages("s1", [Message("user", "summary A")])
    store.append_message("s1", Message("user", "two"))
    store.replace_messages("s1", [Message("user", "summary B")])
    store.append_message("s1", Message("user", "three"))
    assert [m.text for m in store.load_transcript("s1")] == ["one", "two", "three"]

    fork = store.fork_session("s1", "f1")  # a fork replays its own compressed copy
    assert fork.parent_id == "s1" and fork.replay_from == 0
    assert [m.text for m in store.load_transcript("f1")] == ["summary B", "three"]

    assert store.delete_session("s1")
    assert store.search("one") == [] and store.search("two") == []
    assert [r.id for r in store.list_sessions(include_empty=True)[0]] == ["f1"]
    with pytest.raises(KeyError):
        store.load_transcript("s1")


def test_threads_sharing_one_store_get_unique_seqs(store: SessionStore) -> None:
    new_session(store, "s1")
    seqs: list[int] = []

    def append(worker: int) -> None:
        for i in range(50):
            seqs.append(store.append_message("s1", Message("user", f"{worker}-{i}")))

    threads = [threading.Thread(target=append, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seqs) == list(range(200))
    assert sorted(m.text for m in store.load_messages("s1")) == sorted(
        f"{w}-{i}" for w in range(4) for i in range(50)
    )


# --- schema versions ------------------------------------------------------------------------


def test_an_older_file_is_upgraded_and_keeps_its_data(db: Path) -> None:
    db.parent.mkdir(parents=True)
    old = sqlite3.connect(db)
    MIGRATIONS[0](old)  # the first released schema, before full-text search
    old.execute(
        "INSERT INTO sessions (id, cwd, created_at, updated_at, message_count) "
        "VALUES ('old', '/proj', 100.0, 100.0, 1)"
    )
    old.execute(
        "INSERT INTO messages (session_id, seq, role, content, created_at) "
        "VALUES ('old', 0, 'user', ?, 100.0)",
        (json.dumps("the flux capacitor is broken"),),
    )
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()

    with SessionStore(db) as store:
        assert [m.text for m in store.load_messages("old")] == ["the flux capacitor is broken"]
        assert [h.session_id for h in store.search("capacitor")] == ["old"]
        assert store.append_message("old", Message("assistant", "fixed")) == 1
        old_record = store.get_session("old")
        assert old_record is not None and old_record.system_prompt is None  # rebuilt on restore
    check = sqlite3.connect(db)
    assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    check.close()


def test_an_empty_file_gets_the_whole_schema(db: Path) -> None:
    db.parent.mkdir(parents=True)
    sqlite3.connect(db).close()  # a version-0 database: no tables yet
    with SessionStore(db) as store:
        new_session(store, "s1")
        store.append_message("s1", Message("user", "hello"))
        assert store.search("hello")[0].session_id == "s1"


def test_a_newer_file_is_refused_clearly(db: Path) -> None:
    db.parent.mkdir(parents=True)
    newer = sqlite3.connect(db)
    newer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    newer.close()
    with pytest.raises(SchemaVersionError, match=rf"version {SCHEMA_VERSION + 3}.*newer hermes-acp"):
        SessionStore(db)


# --- listing --------------------------------------------------------------------------------


def test_list_is_newest_first_filtered_by_cwd_without_empty_sessions(store: SessionStore) -> None:
    for session_id, cwd in [("a", "/one"), ("b", "/two"), ("c", "/one"), ("empty", "/one")]:
        new_session(store, session_id, cwd)
    for session_id in ("a", "b", "c", "a"):
        store.append_message(session_id, Message("user", "hi"))

    records, cursor = store.list_sessions()
    assert [r.id for r in records] == ["a", "c", "b"]
    assert cursor is None
    assert [r.id for r in store.list_sessions(cwd="/one")[0]] == ["a", "c"]
    assert [r.id for r in store.list_sessions(cwd="/one", include_empty=True)[0]] == ["a", "c", "empty"]


def test_pagination_over_500_sessions_is_complete_and_duplicate_free(store: SessionStore) -> None:
    for i in range(500):
        new_session(store, f"s{i:03}")
        store.append_message(f"s{i:03}", Message("user", "hi"))

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page, cursor = store.list_sessions(limit=7, cursor=cursor)
        seen += [r.id for r in page]
        pages += 1
        if cursor is None:
            break
    assert pages == 72  # 71 full pages and one of 3
    assert seen == [f"s{i:03}" for i in reversed(range(500))]


def test_pagination_stays_correct_while_sessions_are_added_and_bumped(store: SessionStore) -> None:
    for i in range(60):
        new_session(store, f"s{i:02}")
        store.append_message(f"s{i:02}", Message("user", "hi"))
    before = [f"s{i:02}" for i in reversed(range(60))]

    seen: list[str] = []
    bumped: set[str] = set()
    page, cursor = store.list_sessions(limit=10)
    seen += [r.id for r in page]
    step = 0
    while cursor is not None:
        step += 1
        new_session(store, f"new{step}")
        store.append_message(f"new{step}", Message("user", "hi"))
        # Bump one already listed and one not listed yet: neither may appear twice.
        for session_id in (seen[0], before[-step]):
            store.append_message(session_id, Message("user", "again"))
            bumped.add(session_id)
        page, cursor = store.list_sessions(limit=10, cursor=cursor)
        seen += [r.id for r in page]

    assert len(seen) == len(set(seen))
    assert [s for s in before if s not in bumped] == [s for s in seen if s not in bumped]


@pytest.mark.parametrize("cursor", ["garbage!", "", "bm90IGpzb24=", "WzEsIDJd", "WyJ4IiwgInkiXQ==", "é"])
def test_invalid_cursor_is_a_value_error(store: SessionStore, cursor: str) -> None:
    with pytest.raises(ValueError, match="invalid cursor"):
        store.list_sessions(cursor=cursor)


# --- fork and delete ------------------------------------------------------------------------


def test_fork_copies_history_with_lineage_and_stays_independent(store: SessionStore) -> None:
    new_session(store, "src", title="Original", model="m1", approvals={"x": 1})
    for text in ("one", "two"):
        store.append_message("src", Message("user", text))

    fork = store.fork_session("src", "fork", cwd="/elsewhere")
    assert (fork.parent_id, fork.cwd, fork.title, fork.model, fork.approvals, fork.message_count) == (
        "src",
        "/elsewhere",
        "Original",
        "m1",
        {"x": 1},
        2,
    )
    assert store.get_session("fork") == fork
    assert [m.text for m in store.load_messages("fork")] == ["one", "two"]

    assert store.append_message("fork", Message("user", "three")) == 2
    assert [m.text for m in store.load_messages("src")] == ["one", "two"]
    assert store.get_session("src").message_count == 2  # type: ignore[union-attr]
    assert {h.session_id for h in store.search("one")} == {"src", "fork"}
    assert [h.session_id for h in store.search("three")] == ["fork"]

    with pytest.raises(KeyError):
        store.fork_session("missing", "x")
    with pytest.raises(ValueError, match="already exists"):
        store.fork_session("src", "fork")


def test_delete_removes_messages_and_search_hits(db: Path, store: SessionStore) -> None:
    new_session(store, "gone")
    new_session(store, "kept")
    store.append_message("gone", Message("user", "zebra crossing"))
    store.append_message("kept", Message("user", "zebra stripes"))

    assert store.delete_session("gone") is True
    assert store.delete_session("gone") is False
    assert store.get_session("gone") is None
    assert store.load_messages("gone") == []
    assert [h.session_id for h in store.search("zebra")] == ["kept"]
    assert store.search("crossing") == []

    raw = sqlite3.connect(db)
    assert raw.execute("SELECT COUNT(*) FROM messages WHERE session_id = 'gone'").fetchone()[0] == 0
    # Raises if the index holds an entry its content table no longer has.
    raw.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    raw.close()


# --- search ---------------------------------------------------------------------------------


def test_search_finds_words_in_text_and_tool_calls(store: SessionStore) -> None:
    new_session(store, "s1", title="Database work")
    store.append_message("s1", Message("user", "The migrations keep failing on startup"))
    store.append_message(
        "s1", Message("assistant", "", tool_calls=[ToolCall("c1", "grep", '{"pattern": "load_messages"}')])
    )

    hits = store.search("migration failing")
    assert len(hits) == 1
    hit = hits[0]
    assert (hit.session_id, hit.title, hit.seq, hit.role) == ("s1", "Database work", 0, "user")
    assert "**migrations**" in hit.snippet and "**failing**" in hit.snippet
    assert hit.updated_at == store.get_session("s1").updated_at  # type: ignore[union-attr]

    assert [h.seq for h in store.search("load_messages")] == [1]
    assert [h.seq for h in store.search("migr*")] == [0]
    # No message has both words: any of them will do.
    assert [h.seq for h in store.search("startup zeppelin")] == [0]
    assert store.search("zeppelin") == []
    assert store.search("   ") == []


def test_search_respects_cwd_and_exclusion(store: SessionStore) -> None:
    places = [("here1", "/proj"), ("here2", "/proj"), ("below", "/proj/src"), ("there", "/other")]
    places += [("sibling", "/proj2"), ("wild", "/p_oj/x"), ("upper", "/PROJ/x")]  # not below /proj
    for session_id, cwd in places:
        new_session(store, session_id, cwd)
        store.append_message(session_id, Message("user", "deploy the kraken"))

    assert len(store.search("kraken")) == len(places)
    assert {h.session_id for h in store.search("kraken", cwd="/proj")} == {"here1", "here2", "below"}
    assert {h.session_id for h in store.search("kraken", cwd="/proj/")} == {"here1", "here2", "below"}
    assert {h.session_id for h in store.search("kraken", cwd="/p_oj")} == {"wild"}
    assert {h.session_id for h in store.search("kraken", cwd="/")} == {p for p, _ in places}
    assert [h.session_id for h in store.search("kraken", cwd="/proj/src")] == ["below"]
    assert {h.session_id for h in store.search("kraken", cwd="/proj", exclude_session="here1")} == {
        "here2",
        "below",
    }
    assert len(store.search("kraken", limit=2)) == 2


@pytest.mark.parametrize(
    "query",
    [
        '"kraken',
        "kraken*",
        "kraken AND",
        "(kraken",
        "kraken)",
        "NOT kraken",
        "kraken:",
        "^kraken",
        "{kraken}",
        "kraken NEAR/2 the",
    ],
)
def test_search_survives_fts_syntax_in_queries(store: SessionStore, query: str) -> None:
    new_session(store, "s1")
    store.append_message("s1", Message("user", "release the kraken"))
    assert [h.session_id for h in store.search(query)] == ["s1"]


@pytest.mark.parametrize("query", ['"', "*", "AND", "(", ")", '" AND ( * "', "NEAR(", "-", "{}"])
def test_search_of_only_syntax_returns_nothing(store: SessionStore, query: str) -> None:
    new_session(store, "s1")
    store.append_message("s1", Message("user", "release the kraken AND more"))
    assert store.search(query) == []


# --- several processes ------------------------------------------------------------------------


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


APPENDER = """
    import sys
    from pathlib import Path
    from hermes_core.messages import Message
    from hermes_core.store.sessions import SessionStore

    path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = SessionStore(path)
    sys.stdin.readline()  # start together
    for i in range(count):
        store.append_message(name, Message("user", f"{name}-{i}"))
        store.append_message("shared", Message("assistant", f"{name}-{i}"))
    store.close()
"""


def test_two_processes_appending_concurrently_lose_nothing(db: Path) -> None:
    with SessionStore(db) as store:
        for session_id in ("p1", "p2", "shared"):
            new_session(store, session_id)

    procs = [_python(APPENDER, str(db), name, "300") for name in ("p1", "p2")]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err

    with SessionStore(db) as store:
        for name in ("p1", "p2"):
            assert [m.text for m in store.load_messages(name)] == [f"{name}-{i}" for i in range(300)]
        shared = store.load_messages("shared")
        assert sorted(m.text for m in shared) == sorted(f"{n}-{i}" for n in ("p1", "p2") for i in range(300))
        # Each writer's messages keep their own order within the shared history.
        for name in ("p1", "p2"):
            assert [m.text for m in shared if m.text.startswith(name)] == [f"{name}-{i}" for i in range(300)]
        assert store.get_session("shared").message_count == 600  # type: ignore[union-attr]

    raw = sqlite3.connect(db)
    seqs = [row[0] for row in raw.execute("SELECT seq FROM messages WHERE session_id = 'shared'")]
    assert sorted(seqs) == list(range(600))
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    raw.close()


KILLED_WRITER = """
    import sys
    from pathlib import Path
    from hermes_core.messages import Message
    from hermes_core.store.sessions import SessionStore

    store = SessionStore(Path(sys.argv[1]))
    i = 0
    while True:
        seq = store.append_message("s1", Message("user", f"message {i} " + "x" * 2000))
        print(seq, flush=True)
        i += 1
"""


def test_kill_9_mid_stream_loses_no_reported_message(db: Path) -> None:
    with SessionStore(db) as store:
        new_session(store, "s1")

    proc = _python(KILLED_WRITER, str(db))
    assert proc.stdout is not None
    printed: list[int] = []
    try:
        while len(printed) < 200:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "writer died"
            printed.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)
        # read() drains what readline() already buffered; communicate() would read the pipe
        # past that buffer and lose the lines in it
        rest = proc.stdout.read()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    printed += [int(line) for line in rest.split()]
    assert proc.returncode == -signal.SIGKILL

    with SessionStore(db) as store:
        stored = store.load_messages("s1")
        assert len(stored) >= len(printed)
        assert printed == list(range(len(printed)))
        assert all(stored[seq].text.startswith(f"message {seq} ") for seq in printed)
        assert store.get_session("s1").message_count == len(stored)  # type: ignore[union-attr]
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
