"""Many sessions at once in one process: 50 sessions x 5 tool turns, against one alone.

One real `hermes-acp --stdio`, the scripted provider at zero latency in a process of its
own. Every turn is a tool call (`read_file`) and then an answer. First one session runs
its turns alone (the reference); then 50 sessions each run 5 turns one after another, all
sessions at once. A turn is timed from its prompt to its response. The figure is the p95
turn of the 250 (target < 1 s), given beside the lone session's median turn.

    python -m benchmarks.bench_concurrency [--sessions N] [--turns N] [--profile FILE]

`--profile FILE` records the server with py-spy (when installed) into FILE (speedscope).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.drive import start_profiler, stop_profiler  # noqa: E402
from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import ServerProcess, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

TARGET_SECONDS = 1.0


def tool_turn_replies(turns: int) -> list[Reply]:
    """Replies for `turns` tool turns. The fake hands them out in order whoever asks, so
    with sessions interleaved a turn may get two tool calls before its answer and another
    none; each turn still ends on exactly one answer, and all replies are used."""
    replies = []
    for _ in range(turns):
        replies.append(Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]))
        replies.append(Reply(text="The notes say: a note."))
    return replies


def prompt(request_id: int, session: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]},
    }


async def run_turns(server: ServerProcess, sessions: list[str], turns: int, first_id: int) -> list[float]:
    """Each session runs `turns` turns in sequence, all sessions at once; every turn's time."""
    next_id = first_id
    in_flight: dict[int, tuple[str, int, float]] = {}
    durations: list[float] = []

    async def start(session: str, turn: int) -> None:
        nonlocal next_id
        request_id, next_id = next_id, next_id + 1
        in_flight[request_id] = (session, turn, time.perf_counter())
        await server.send(prompt(request_id, session, f"turn {turn}: read the notes"))

    for session in sessions:
        await start(session, 0)
    while in_flight:
        message = await server.next_message(120)
        if "method" in message or message.get("id") not in in_flight:
            continue
        session, turn, started = in_flight.pop(message["id"])
        durations.append(time.perf_counter() - started)
        assert message.get("result", {}).get("stopReason") == "end_turn", message
        if turn + 1 < turns:
            await start(session, turn + 1)
    return durations


async def main(count: int, turns: int, profile: Path | None) -> int:
    load = os.getloadavg()[0]
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        (project / "notes.txt").write_text("a note\n")
        env = server_env(home, None, HERMES_ACP_LOG_LEVEL="warning")
        env.update(OPENAI_BASE_URL=fake.openai_base_url, OPENAI_API_KEY="test")
        async with spawn_server(env, check_schema=False) as server:
            await server.request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            sessions = []
            for i in range(count + 1):
                reply = await server.request(100 + i, "session/new", {"cwd": str(project), "mcpServers": []})
                session = reply["result"]["sessionId"]
                await server.request(10_000 + i, "session/set_mode", {"sessionId": session, "modeId": "yolo"})
                sessions.append(session)
            fake.script(tool_turn_replies(turns * 2))
            alone = await run_turns(server, sessions[:1], turns * 2, 20_000)
            fake.script(tool_turn_replies(count * turns))
            recorder = await start_profiler(server.pid, profile, 100)
            together = await run_turns(server, sessions[1:], turns, 30_000)
            await stop_profiler(recorder)
    lone = statistics.median(alone[turns:])  # the first turns warm up
    p95 = statistics.quantiles(together, n=20)[-1]
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    print(f"one session alone: median turn {lone * 1e3:.1f} ms")
    print(
        f"{count} sessions x {turns} tool turns at once: p95 turn {p95 * 1e3:.0f} ms, "
        f"median {statistics.median(together) * 1e3:.0f} ms, max {max(together) * 1e3:.0f} ms "
        f"({p95 / lone:.1f}x the lone turn); target p95 < {TARGET_SECONDS:g} s  "
        f"{'yes' if p95 < TARGET_SECONDS else 'NO'}"
    )
    return 0 if p95 < TARGET_SECONDS else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--profile", type=Path, default=None)
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.sessions, arguments.turns, arguments.profile)))
