"""Per-turn cost over a long session: turn 1 against turn 500 of the same session.

One real `hermes-acp --stdio`, the scripted provider at zero latency in a process of its
own, 500 prompts in one session (every fifth answer asks for a tool first, so the
history holds tool calls and results too). A turn is timed from the prompt to its
response, and the server's CPU time over it is read from /proc (all its threads). The
figure is the median of the last 25 turns over the median of turns 6-30 (the first five
warm up): 1.0 is flat, the history's growth costing nothing per turn. The server's CPU
ratio is the one judged: the wall time also holds what grows with the request outside
the server (the fake model parsing a body of the whole history, as any model must).

    python -m benchmarks.bench_long_session [--turns N] [--api API] [--profile FILE]

`--api` picks the provider's API shape: chat_completions (the default), responses or
anthropic_messages. `--profile FILE` records the server with py-spy (when installed) into
FILE (speedscope).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.drive import API_SETTINGS, send_prompt, start_profiler, stop_profiler  # noqa: E402
from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import ServerProcess, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

TARGET = 1.25  # late turns over early ones; noise on a shared box stays under this
ANSWER = "Here is what I found in the project, in a few sentences of ordinary length. " * 4


def cpu_seconds(pid: int) -> float:
    """The CPU time the process's live threads have run so far, in nanoseconds' precision
    (Linux schedstat; /proc/PID/stat counts in 10 ms ticks, a whole turn's worth)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e9


async def turn(server: ServerProcess, request_id: int, session: str, text: str) -> tuple[float, float]:
    """(wall seconds, server CPU seconds) of one prompt."""
    cpu = cpu_seconds(server.pid)
    started = time.perf_counter()
    await send_prompt(server, request_id, session, text)
    while True:
        message = await server.next_message(60)
        if message.get("id") == request_id and "method" not in message:
            assert message.get("result", {}).get("stopReason") == "end_turn", message
            return time.perf_counter() - started, cpu_seconds(server.pid) - cpu


def windows(samples: list[float]) -> tuple[float, float, float]:
    """Medians of turns 6-30, of the 25 turns around turn 100, of the last 25."""
    middle = max(5, min(len(samples) - 25, 88))
    return (
        statistics.median(samples[5:30]),
        statistics.median(samples[middle : middle + 25]),
        statistics.median(samples[-25:]),
    )


async def main(turns: int, api: str, profile: Path | None) -> int:
    load = os.getloadavg()[0]
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        (project / "notes.txt").write_text("a note\n" * 20)
        env = server_env(home, fake, HERMES_ACP_LOG_LEVEL="warning", **API_SETTINGS[api])
        async with spawn_server(env, check_schema=False) as server:
            recorder = await start_profiler(server.pid, profile, 50)
            await server.request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            reply = await server.request(2, "session/new", {"cwd": str(project), "mcpServers": []})
            session = reply["result"]["sessionId"]
            await server.request(3, "session/set_mode", {"sessionId": session, "modeId": "yolo"})
            walls: list[float] = []
            cpus: list[float] = []
            for i in range(turns):
                replies = [Reply(text=ANSWER)]
                if i % 5 == 4:
                    call = ToolCallSpec("read_file", {"path": "notes.txt"})
                    replies.insert(0, Reply(tool_calls=[call]))
                fake.script(replies)
                wall, cpu = await turn(server, 10 + i, session, f"turn {i}: what next?")
                walls.append(wall)
                cpus.append(cpu)
            await stop_profiler(recorder)
    cores = os.cpu_count()
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} ({cores} cores); {turns} turns, {api}")
    print("median ms per turn    turns 6-30  ~turn 100  last 25  late/early")
    for label, samples in (("wall", walls), ("server CPU", cpus)):
        early, middle, late = windows(samples)
        print(f"{label:<20} {early * 1e3:10.1f} {middle * 1e3:10.1f} {late * 1e3:8.1f} {late / early:9.2f}x")
    early, _, late = windows(cpus)
    ratio = late / early
    verdict = "yes" if ratio <= TARGET else "NO"
    print(f"server CPU late / early: {ratio:.2f}x (target <= {TARGET}x)  {verdict}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--api", choices=list(API_SETTINGS), default="chat_completions")
    parser.add_argument("--profile", type=Path, default=None)
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.turns, arguments.api, arguments.profile)))
