"""Many sessions at once in one process: 50 sessions x 5 tool turns, against one alone.

One real `hermes-acp --stdio`, the scripted provider at zero latency in a process of its
own. Every turn is a tool call (`read_file`) and then an answer. First one session runs
5 turns alone to warm up, then 25 more (`--lone`: its CPU a turn is counted in 10 ms
ticks, so it needs many) as the reference; then 50 sessions each run 5 turns one after another, all
sessions at once. A turn is timed from its prompt to its response. The figure is the p95
turn of the 250 (target < 1 s), given beside the lone session's median turn.

Where the time goes is printed beside it: the CPU each process spent over the crowd (the
server, the fake model, this client; /proc counts in ticks, plenty over 250 turns) as
shares of the wall time, the server's CPU per turn alone and in the crowd, and the turns by
their index (turn 0 of every session starts at once: it pays the connection set-up).

    python -m benchmarks.bench_concurrency [--sessions N] [--turns N] [--lone N] [--profile FILE]
        [--source DIR] [--gc | --cprofile FILE]

`--profile FILE` records the server with py-spy (when installed) into FILE (speedscope).
`--source DIR` runs the server from another source tree (e.g. a copy of main), to alternate
before/after runs from the same disk. `--gc` counts and times the server's cyclic garbage
collections over the crowd, by generation (`gc.callbacks`, installed before the server
starts). `--cprofile FILE` records the server's event-loop thread with cProfile over the
crowd (started and stopped by the same signals) into FILE (`pstats`); it slows the server,
so read its shares, not its times.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_startup import ours  # noqa: E402
from benchmarks.drive import start_profiler, stop_profiler  # noqa: E402
from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import ServerProcess, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

TARGET_SECONDS = 1.0
IDLE_SECONDS = 3.0  # the server at rest after the crowd: what its open sessions cost doing nothing

# Run in the server before it starts (`--gc`): the collections by generation, counted and
# timed; SIGUSR1 starts the count over, SIGUSR2 keeps what it holds, written to stderr at exit.
GC_COUNTER = """
import atexit, gc, signal, sys, time
_gc = {"n": [0, 0, 0], "s": [0.0, 0.0, 0.0], "t": 0.0, "kept": None}
def _gc_seen(phase, info):
    if phase == "start":
        _gc["t"] = time.perf_counter()
    else:
        g = info["generation"]
        _gc["n"][g] += 1
        _gc["s"][g] += time.perf_counter() - _gc["t"]
def _gc_reset(*_):
    _gc["n"], _gc["s"] = [0, 0, 0], [0.0, 0.0, 0.0]
def _gc_keep(*_):
    _gc["kept"] = (list(_gc["n"]), list(_gc["s"]), gc.get_threshold(), len(gc.get_objects()))
def _gc_report():
    if _gc["kept"] is not None:
        sys.stderr.write("gc-stats %r\\n" % (_gc["kept"],))
gc.callbacks.append(_gc_seen)
signal.signal(signal.SIGUSR1, _gc_reset)
signal.signal(signal.SIGUSR2, _gc_keep)
atexit.register(_gc_report)
"""

# Run in the server before it starts (`--cprofile FILE`): SIGUSR1 starts cProfile on the main
# thread (the event loop; a signal handler runs there), SIGUSR2 stops it and writes FILE. It
# counts the thread's CPU, not the wall: waits for the GIL or a core are not the loop's cost.
CPROFILE = """
import cProfile, signal, time
_prof = cProfile.Profile(time.thread_time)
def _prof_start(*_):
    _prof.enable()
def _prof_stop(*_):
    _prof.disable()
    _prof.dump_stats(%r)
signal.signal(signal.SIGUSR1, _prof_start)
signal.signal(signal.SIGUSR2, _prof_stop)
"""


def server_command(source: Path, count_gc: bool, cprofile: Path | None) -> tuple[str, ...] | None:
    """The server's command line: from `source`, with the collection counter or the profiler
    when asked (None: the harness's own, this tree's `-m hermes_acp`)."""
    if source == ROOT and not count_gc and cprofile is None:
        return None
    if source == ROOT:
        command = (
            sys.executable,
            "-c",
            "import sys; from hermes_acp.cli import main; sys.exit(main())",
            "--stdio",
        )
    else:
        command = ours(source)
    executable, flag, code, *args = command
    prefix = GC_COUNTER if count_gc else CPROFILE % str(cprofile) if cprofile is not None else ""
    return (executable, flag, prefix + code, *args)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def idle_cpu_seconds(pid: int, seconds: float) -> float:
    """CPU time process `pid` spends over `seconds` of wall time while nobody asks it anything."""
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return cpu_seconds(pid) - before


def thread_count(pid: int) -> int:
    """The threads process `pid` has now (a workspace watcher is one, or more)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line in /proc/PID/status")


def io_calls(pid: int) -> tuple[int, int]:
    """The read and write system calls process `pid` (all its threads) has made."""
    fields = dict(line.split(": ", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """CPU time (user + system) process `pid` has used, its ended threads included; or
    only its thread `thread` (the main thread's id is the pid)."""
    where = f"/proc/{pid}" if thread is None else f"/proc/{pid}/task/{thread}"
    fields = Path(f"{where}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each live thread of process `pid`, by thread id."""
    spent = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            spent[int(task.name)] = cpu_seconds(pid, int(task.name))
        except (FileNotFoundError, ProcessLookupError):  # ended meanwhile
            continue
    return spent


class CpuMeter:
    """CPU time of the server, the fake model and this client over a stretch of wall time;
    and of the server's main thread alone: the event loop, which every turn queues for,
    while other threads (workers, watchers) may run beside it on the other core."""

    def __init__(self, server_pid: int, fake_pid: int) -> None:
        self._pids = (server_pid, fake_pid)
        self._start = self._read()

    def _read(self) -> tuple[float, float, float, float, float]:
        server, fake = (cpu_seconds(pid) for pid in self._pids)
        loop = cpu_seconds(self._pids[0], self._pids[0])
        return server, fake, time.process_time(), time.perf_counter(), loop

    def spent(self) -> tuple[float, float, float, float]:
        """(server, fake, client) CPU seconds and the wall seconds since the meter started."""
        server, fake, client, wall, _ = (b - a for a, b in zip(self._start, self._read(), strict=True))
        return server, fake, client, wall

    def loop_spent(self) -> float:
        """CPU seconds of the server's main thread (its event loop) since the meter started."""
        return cpu_seconds(self._pids[0], self._pids[0]) - self._start[4]


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


async def run_turns(
    server: ServerProcess, sessions: list[str], turns: int, first_id: int
) -> list[list[float]]:
    """Each session runs `turns` turns in sequence, all sessions at once; the turns' times,
    grouped by the turn's index in its session."""
    next_id = first_id
    in_flight: dict[int, tuple[str, int, float]] = {}
    durations: list[list[float]] = [[] for _ in range(turns)]

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
        durations[turn].append(time.perf_counter() - started)
        assert message.get("result", {}).get("stopReason") == "end_turn", message
        if turn + 1 < turns:
            await start(session, turn + 1)
    return durations


async def main(
    count: int,
    turns: int,
    profile: Path | None,
    source: Path,
    count_gc: bool,
    cprofile: Path | None,
    lone_turns: int,
) -> int:
    load = os.getloadavg()[0]
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        (project / "notes.txt").write_text("a note\n")
        env = server_env(home, None, HERMES_ACP_LOG_LEVEL="warning")
        env.update(OPENAI_BASE_URL=fake.openai_base_url, OPENAI_API_KEY="test")
        async with spawn_server(
            env, check_schema=False, command=server_command(source, count_gc, cprofile)
        ) as server:
            await server.request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            sessions = []
            for i in range(count + 1):
                reply = await server.request(100 + i, "session/new", {"cwd": str(project), "mcpServers": []})
                session = reply["result"]["sessionId"]
                await server.request(10_000 + i, "session/set_mode", {"sessionId": session, "modeId": "yolo"})
                sessions.append(session)
            fake.script(tool_turn_replies(turns + lone_turns))
            await run_turns(server, sessions[:1], turns, 20_000)  # the first turns warm up
            meter = CpuMeter(server.pid, fake.pid)
            alone = [
                t for by_index in await run_turns(server, sessions[:1], lone_turns, 25_000) for t in by_index
            ]
            lone_cpu = meter.spent()[0] / lone_turns
            fake.script(tool_turn_replies(count * turns))
            recorder = await start_profiler(server.pid, profile, 100)
            if count_gc or cprofile is not None:
                os.kill(server.pid, signal.SIGUSR1)
            meter = CpuMeter(server.pid, fake.pid)
            calls_before = io_calls(server.pid)
            threads_before = threads_cpu(server.pid)
            by_index = await run_turns(server, sessions[1:], turns, 30_000)
            server_cpu, fake_cpu, client_cpu, wall = meter.spent()
            loop_cpu = meter.loop_spent()
            threads_after = threads_cpu(server.pid)
            reads, writes = (b - a for a, b in zip(calls_before, io_calls(server.pid), strict=True))
            if count_gc or cprofile is not None:
                os.kill(server.pid, signal.SIGUSR2)
            rss = rss_mb(server.pid)
            threads = thread_count(server.pid)
            idle_cpu = await idle_cpu_seconds(server.pid, IDLE_SECONDS)
            await stop_profiler(recorder)
    together = [t for turn_times in by_index for t in turn_times]
    lone = statistics.median(alone)
    p95 = statistics.quantiles(together, n=20)[-1]
    print(
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); server from {source}"
    )
    print(f"one session alone: median turn {lone * 1e3:.1f} ms, server CPU {lone_cpu * 1e3:.1f} ms a turn")
    print(
        f"the crowd: {wall:.2f} s wall; CPU server {server_cpu / wall:.0%}, "
        f"fake model {fake_cpu / wall:.0%}, "
        f"this client {client_cpu / wall:.0%}; server CPU {server_cpu / len(together) * 1e3:.1f} ms a turn"
    )
    print(
        f"the server's event loop (its main thread): {loop_cpu / len(together) * 1e3:.1f} ms of CPU "
        f"a crowd turn, busy {loop_cpu / wall:.0%} of the wall time"
    )
    others = sorted(
        (spent - threads_before.get(tid, 0.0) for tid, spent in threads_after.items() if tid != server.pid),
        reverse=True,
    )
    print(
        "the server's other threads, CPU a crowd turn (live ones, busiest first): "
        + ", ".join(f"{spent / len(together) * 1e3:.2f}" for spent in others[:6] if spent > 0)
        + " ms"
    )
    print(f"server RSS after the crowd: {rss:.1f} MB, {threads} threads ({count + 1} sessions open)")
    print(f"server CPU at rest with them open: {idle_cpu / IDLE_SECONDS * 1e3:.1f} ms a second")
    print(
        f"server system calls a crowd turn: {reads / len(together):.1f} reads, "
        f"{writes / len(together):.1f} writes (stdout, sockets, files, thread wake-ups)"
    )
    for line in server.stderr_lines:
        if line.startswith("gc-stats "):
            counts, seconds, threshold, tracked = ast.literal_eval(line.removeprefix("gc-stats "))
            print(
                f"collections over the crowd (threshold {threshold}, {tracked:,} objects tracked): "
                + ", ".join(
                    f"gen {g} {n} in {t * 1e3:.0f} ms"
                    for g, (n, t) in enumerate(zip(counts, seconds, strict=True))
                )
                + f"; {sum(seconds) / len(together) * 1e3:.2f} ms a turn"
            )
    for index, turn_times in enumerate(by_index):
        print(
            f"  turn {index}: median {statistics.median(turn_times) * 1e3:.0f} ms, "
            f"max {max(turn_times) * 1e3:.0f} ms"
        )
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
    parser.add_argument(
        "--lone",
        type=int,
        default=25,
        help="the lone session's measured turns (CPU is counted in 10 ms ticks)",
    )
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--source", type=Path, default=ROOT, help="the source tree to run the server from")
    parser.add_argument("--gc", action="store_true", help="count the server's garbage collections")
    parser.add_argument("--cprofile", type=Path, default=None, help="cProfile the server's loop into FILE")
    arguments = parser.parse_args()
    if arguments.gc and arguments.cprofile is not None:
        parser.error("--gc and --cprofile use the same signals: one at a time")
    sys.exit(
        asyncio.run(
            main(
                arguments.sessions,
                arguments.turns,
                arguments.profile,
                arguments.source.resolve(),
                arguments.gc,
                None if arguments.cprofile is None else arguments.cprofile.resolve(),
                arguments.lone,
            )
        )
    )
