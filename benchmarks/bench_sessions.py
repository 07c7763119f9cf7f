"""Sessions over the protocol: `session/load` of a 2,000-message session and `session/list`
over 10,000 sessions, against the real `hermes-acp --stdio`.

Each is timed after warm-up, from the request to its response (a load's replayed
updates all come before its response) and set beside a reference taken in the same run: the server's
round trip for a request that does no work (an unknown method), and the store reading
the same rows in-process.

    python -m benchmarks.bench_sessions
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from hermes_core.messages import Message, ToolCall  # noqa: E402
from hermes_core.store.sessions import SessionStore  # noqa: E402
from hermes_core.store.writer import SessionRecord  # noqa: E402
from tests.support.acp_harness import server_env, spawn_server  # noqa: E402

LOAD_MESSAGES = 2_000
LIST_SESSIONS = 10_000
LOAD_TARGET_MS = 300.0
LIST_TARGET_MS = 50.0


def build_store(home: Path, project: Path) -> str:
    store = SessionStore(home / "sessions.db")  # creates the directory
    big = store.create_session(SessionRecord(id="big", cwd=str(project), title="a long session"))
    for i in range(LOAD_MESSAGES // 4):
        call = ToolCall(f"call_{i}", "read_file", f'{{"path": "src/module_{i}.py"}}')
        display = {
            "title": f"Read src/module_{i}.py",
            "kind": "read",
            "tool": "read_file",
            "raw_input": {"path": f"src/module_{i}.py"},
            "locations": [[str(project / f"src/module_{i}.py"), None]],
            "status": "completed",
            "raw_output": None,
        }
        for message in (
            Message(role="user", content=f"Please look at module {i} and explain it."),
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content="def f(): return 1\n" * 20, tool_call_id=call.id, display=display),
            Message(role="assistant", content=f"Module {i} defines f, which returns 1. " * 5),
        ):
            store.append_message(big.id, message)
    for i in range(LIST_SESSIONS):
        store.create_session(SessionRecord(id=f"s{i:05d}", cwd=str(project), title=f"session {i}"))
        store.append_message(f"s{i:05d}", Message(role="user", content=f"hello {i}"))
    store.close()
    return big.id


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, FakeProviderProcess() as fake:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        print(f"building a store with {LIST_SESSIONS:,} sessions and one of {LOAD_MESSAGES:,} messages…")
        data = home / ".hermes-acp"  # where server_env points HERMES_ACP_HOME
        session_id = build_store(data, project)
        store = SessionStore(data / "sessions.db")
        store_reads = []
        for _ in range(5):
            start = time.perf_counter()
            store.load_messages(session_id)
            store_reads.append(time.perf_counter() - start)
        store.close()
        async with spawn_server(server_env(home, fake), check_schema=False) as server:
            ids = iter(range(1, 1_000_000))
            await server.request(next(ids), "initialize", {"protocolVersion": 1})
            pings, loads, lists = [], [], []
            for _ in range(20):
                start = time.perf_counter()
                await server.request(next(ids), "_hermes/ping", {})
                pings.append(time.perf_counter() - start)
            params = {"sessionId": session_id, "cwd": str(project), "mcpServers": []}
            # After warm-up: the provider SDK's import runs in a background thread after
            # initialize and holds the interpreter lock for a second or two.
            await server.request(next(ids), "session/load", params, within=60)
            await asyncio.sleep(4)
            for _ in range(5):
                start = time.perf_counter()
                reply = await server.request(next(ids), "session/load", params, within=60)
                loads.append(time.perf_counter() - start)
                assert "result" in reply, reply
            for _ in range(20):
                start = time.perf_counter()
                reply = await server.request(next(ids), "session/list", {"cwd": str(project)})
                lists.append(time.perf_counter() - start)
                assert len(reply["result"]["sessions"]) > 0, reply
    ping = statistics.median(pings) * 1000
    load = statistics.median(loads) * 1000
    listing = statistics.median(lists) * 1000
    store_ms = statistics.median(store_reads) * 1000
    print(f"round trip, no work         : {ping:8.2f} ms")
    print(f"store reads the 2,000 rows  : {store_ms:8.2f} ms (in-process)")
    print(
        f"session/load, 2,000 messages: {load:8.2f} ms  "
        f"({load / store_ms:.1f}x the store read; target < {LOAD_TARGET_MS:.0f} ms)"
    )
    print(
        f"session/list, 10,000 stored : {listing:8.2f} ms  "
        f"({listing / ping:.1f}x a no-work round trip; target < {LIST_TARGET_MS:.0f} ms)"
    )
    return 0 if load < LOAD_TARGET_MS and listing < LIST_TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
