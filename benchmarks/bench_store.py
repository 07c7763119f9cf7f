"""The session store against bare SQLite on the same file, measured in one run.

1. append_message, per committed message, vs. a bare INSERT + COMMIT of the same row.
2. list_sessions(limit=50) over 10,000 sessions vs. a bare SELECT ... ORDER BY ... LIMIT 50.
3. load_messages of a 2,000-message session vs. a bare SELECT of its rows.

Run: python -m benchmarks.bench_store [--appends N] [--sessions N] [--history N]
Exits non-zero when append's median is 1 ms or more, or list's median 50 ms or more.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hermes_core.messages import Message, ToolCall
from hermes_core.store.sessions import SessionStore
from hermes_core.store.writer import SessionRecord

APPEND_TARGET_MS = 1.0
LIST_TARGET_MS = 50.0


def sample_message(i: int) -> Message:
    return Message(
        "assistant",
        f"Step {i}: I read the parser and the failing test; the tokenizer drops trailing "
        "whitespace before the lookahead, so the last token of each line is lost. " * 3,
        tool_calls=[ToolCall(f"call_{i}", "read_file", '{"path": "src/parser/tokenizer.py", "offset": 120}')],
        finish_reason="tool_calls",
    )


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def verdict(measured_ms: float, target_ms: float) -> str:
    return "ok" if measured_ms < target_ms else "MISSED"


def raw_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def bench_append(directory: Path, count: int) -> tuple[float, float, float]:
    path = directory / "append.db"
    store = SessionStore(path)
    store.create_session(SessionRecord(id="bench", cwd="/bench"))
    raw = raw_connection(path)
    raw.execute("CREATE TABLE plain (id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, body TEXT)")
    ours: list[float] = []
    bare: list[float] = []
    for i in range(count):
        message = sample_message(i)
        body = json.dumps(message.to_dict())

        def insert(i: int = i, body: str = body) -> None:
            raw.execute("BEGIN")
            raw.execute("INSERT INTO plain (session_id, seq, body) VALUES ('bench', ?, ?)", (i, body))
            raw.execute("COMMIT")

        # Alternating, so background load and WAL growth hit both alike.
        ours.append(timed(lambda message=message: store.append_message("bench", message)))
        bare.append(timed(insert))
    raw.close()
    store.close()
    return statistics.median(ours), percentile(ours, 0.95), statistics.median(bare)


def build_sessions(path: Path, sessions: int) -> None:
    """Sessions with one message each, inserted in bulk through the store's own schema."""
    SessionStore(path).close()
    message = sample_message(0).to_dict()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO sessions (id, cwd, title, created_at, updated_at, model, message_count) "
        "VALUES (?, ?, ?, ?, ?, 'gpt-4.1', 1)",
        [(f"s{n:05}", f"/proj{n % 10}", f"Session {n}", 1e9 + n, 1e9 + n) for n in range(sessions)],
    )
    conn.executemany(
        "INSERT INTO messages (session_id, seq, role, content, tool_calls, created_at, search_text) "
        "VALUES (?, 0, 'assistant', ?, ?, ?, ?)",
        [
            (f"s{n:05}", json.dumps(message["content"]), json.dumps(message["tool_calls"]), 1e9 + n, "x")
            for n in range(sessions)
        ],
    )
    conn.execute("COMMIT")
    conn.close()


def bench_list(directory: Path, sessions: int, rounds: int) -> tuple[float, float, float]:
    path = directory / "list.db"
    build_sessions(path, sessions)
    store = SessionStore(path)
    raw = raw_connection(path)
    bare_sql = "SELECT * FROM sessions ORDER BY updated_at DESC LIMIT 50"
    ours, ours_cwd, bare = [], [], []
    for _ in range(rounds):
        ours.append(timed(lambda: store.list_sessions(limit=50)))
        ours_cwd.append(timed(lambda: store.list_sessions(cwd="/proj3", limit=50)))
        bare.append(timed(lambda: raw.execute(bare_sql).fetchall()))
    page, _ = store.list_sessions(limit=50)
    assert [r.id for r in page] == [f"s{n:05}" for n in range(sessions - 1, sessions - 51, -1)]
    raw.close()
    store.close()
    return statistics.median(ours), statistics.median(ours_cwd), statistics.median(bare)


def bench_load(directory: Path, history: int, rounds: int) -> tuple[float, float]:
    path = directory / "load.db"
    store = SessionStore(path)
    store.create_session(SessionRecord(id="long", cwd="/bench"))
    store.replace_messages("long", [sample_message(i) for i in range(history)])
    raw = raw_connection(path)
    bare_sql = "SELECT * FROM messages WHERE session_id = 'long' ORDER BY seq"
    ours, bare = [], []
    for _ in range(rounds):
        ours.append(timed(lambda: store.load_messages("long")))
        bare.append(timed(lambda: raw.execute(bare_sql).fetchall()))
    assert len(store.load_messages("long")) == history
    raw.close()
    store.close()
    return statistics.median(ours), statistics.median(bare)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--appends", type=int, default=2_000)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args(argv)

    failures = []
    with tempfile.TemporaryDirectory(prefix="bench-store-") as temp:
        directory = Path(temp)

        median, p95, bare = bench_append(directory, args.appends)
        print(f"append_message x{args.appends}: median {median:.3f} ms, p95 {p95:.3f} ms")
        print(f"  bare INSERT+COMMIT, same row: median {bare:.3f} ms -> ratio {median / bare:.1f}x")
        print(f"  target: median < {APPEND_TARGET_MS} ms -> {verdict(median, APPEND_TARGET_MS)}")
        if median >= APPEND_TARGET_MS:
            failures.append("append_message")

        listed, listed_cwd, bare = bench_list(directory, args.sessions, args.rounds)
        print(f"list_sessions(limit=50) over {args.sessions} sessions: median {listed:.3f} ms")
        print(f"  with a cwd filter: median {listed_cwd:.3f} ms")
        print(
            f"  bare SELECT ... ORDER BY updated_at DESC LIMIT 50: median {bare:.3f} ms -> ratio "
            f"{listed / bare:.1f}x"
        )
        print(f"  target: median < {LIST_TARGET_MS} ms -> {verdict(listed, LIST_TARGET_MS)}")
        if listed >= LIST_TARGET_MS:
            failures.append("list_sessions")

        loaded, bare = bench_load(directory, args.history, max(5, args.rounds // 5))
        print(f"load_messages of {args.history} messages: median {loaded:.2f} ms")
        print(
            f"  bare SELECT of the same rows (no decoding): median {bare:.2f} ms -> ratio "
            f"{loaded / bare:.1f}x"
        )

    if failures:
        print(f"FAILED: {', '.join(failures)} missed the target")
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
