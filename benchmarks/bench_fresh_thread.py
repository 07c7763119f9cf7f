"""A new thread as an editor opens one, side by side with codex-acp in the same run.

Zed's sequence, each request sent the moment the previous answer arrives: spawn ->
`initialize` answered -> `session/new` answered -> a prompt's first model chunk. Both agents
talk to the same scripted model (benchmarks/fake_process.py), alternating run by run:
hermes-acp on chat completions, Responses and Anthropic; codex-acp on Responses, the one
wire API it speaks (its `wire_api = "chat"` is refused), as its reference for all three.
Beside the times, CPU:

- spawn -> a ready session: the process's CPU (all threads, /proc) once it has answered
  `session/new` and then gone quiet (whatever it warms up for the first prompt counted);
- a process that only answers `initialize` and exits at the end of its input (wait4's
  rusage: every thread, to the exit).

hermes-acp runs warm (the default: a warm server forked the process serving the editor,
hermes_acp/warm/; one priming spawn per API starts the server, which is waited for) and
cold (`HERMES_ACP_WARM=0`). A warm spawn's CPU is the stub's plus its forked child's: the
child is the process holding the stub's stdout pipe, its /proc stat read until it is gone.

    python -m benchmarks.bench_fresh_thread [--runs N] [--before DIR]

codex-acp's linux-x64 binary is installed into the cache with npm on first use
(bench_startup.codex_acp) and pointed at the scripted model with `-c` overrides in a
throwaway CODEX_HOME. `--before DIR` measures another source tree too (e.g. a worktree of
main), in the same alternation. Exit code 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_startup import ZED_INITIALIZE, codex_acp, ours  # noqa: E402
from benchmarks.drive import API_SETTINGS  # noqa: E402
from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import server_env  # noqa: E402
from tests.support.fake_provider import Reply  # noqa: E402

REPLY = "Hello from the model, streamed in a few pieces."
CODEX_MODEL = "gpt-5.1"
DELTAS = 10_000
TICKS = os.sysconf("SC_CLK_TCK")
WARM_LABEL = "warm"
TARGETS = {
    "session/new": 1.5,
    "first chunk": 1.2,
    "CPU to a ready session": 3.0,
    f"{DELTAS:,} deltas": 1.0,
}
EXIT_GRACE = 5.0
INIT_ONLY_CPU_LIMIT = 0.36  # the figure: what a process that only answers initialize burnt


@dataclass
class Agent:
    name: str
    command: tuple[str, ...]
    env: dict[str, str]
    samples: dict[str, list[float]] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)

    def add(self, measure: str, value: float) -> None:
        self.samples.setdefault(measure, []).append(value)

    def median(self, measure: str) -> float:
        return statistics.median(self.samples[measure])


def codex_agent(binary: Path, home: Path, base_url: str) -> Agent:
    codex_home = home / "codex"
    codex_home.mkdir(exist_ok=True)
    provider = f'{{name="fake", base_url="{base_url}", env_key="FAKE_API_KEY", wire_api="responses"}}'
    command = (
        str(binary),
        "-c",
        'model_provider="fake"',
        "-c",
        f'model="{CODEX_MODEL}"',
        "-c",
        f"model_providers.fake={provider}",
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CODEX_HOME": str(codex_home),
        "FAKE_API_KEY": "test",
    }
    return Agent("codex-acp (Responses)", command, env)


# -- one fresh thread ----------------------------------------------------------------------------


class Client:
    """The editor's side of the pipes: just enough ACP to open a thread."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.stdin, self.stdout = process.stdin, process.stdout

    async def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        await self.stdin.drain()

    async def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            message = await self.next()
            if message.get("id") == request_id and "method" not in message:
                assert "result" in message, message
                return message["result"]

    async def next(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.stdout.readline(), 60)
        assert line, "the agent closed its output"
        message = json.loads(line)
        if "method" in message and "id" in message:  # a request to the editor: decline it
            await self.send(
                {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
            )
        return message

    async def close(self) -> None:
        self.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), EXIT_GRACE)
        except TimeoutError:
            self.process.terminate()
            await self.process.wait()


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def spawn(agent: Agent, cwd: Path) -> Client:
    process = await asyncio.create_subprocess_exec(
        *agent.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=agent.env,
        cwd=cwd,
    )
    return Client(process)


async def open_session(client: Client, cwd: Path) -> str:
    await client.send(
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}}
    )
    return (await client.answer(1))["sessionId"]


async def fresh_thread(agent: Agent, fake: FakeProviderProcess, cwd: Path) -> None:
    """spawn -> initialize -> session/new -> prompt's first model chunk, each sent at once."""
    fake.script([Reply(text=REPLY, chunk_size=6)])
    started = time.perf_counter()
    client = await spawn(agent, cwd)
    await client.stdin.drain()
    client.stdin.write(ZED_INITIALIZE + b"\n")
    await client.answer(0)
    agent.add("initialize", time.perf_counter() - started)
    session = await open_session(client, cwd)
    agent.add("session/new", time.perf_counter() - started)
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
    await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
    first: float | None = None
    text = ""
    while True:
        message = await client.next()
        if message.get("id") == 2 and "method" not in message:
            assert "result" in message, message
            break
        update = message.get("params", {}).get("update", {}) if message.get("method") else {}
        piece = (
            update.get("content", {}).get("text", "")
            if update.get("sessionUpdate") == "agent_message_chunk"
            else ""
        )
        if piece and REPLY.startswith(text + piece):  # the model's text, not an agent's notice
            text += piece
            if first is None:
                first = time.perf_counter()
    assert first is not None and text == REPLY, text
    agent.add("first chunk", first - started)
    await many_deltas(agent, fake, client, session)
    await client.close()


async def many_deltas(agent: Agent, fake: FakeProviderProcess, client: Client, session: str) -> None:
    """A later prompt whose answer is DELTAS deltas, each in an HTTP chunk of its own:
    prompt -> its answer, every delta's text received."""
    answer = ("abcdefghij" * DELTAS)[:DELTAS]
    fake.script([Reply(text=answer, chunk_size=1)])
    started = time.perf_counter()
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "more"}]}
    await client.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
    text: list[str] = []
    chunks = 0
    while True:
        message = await client.next()
        if message.get("id") == 3 and "method" not in message:
            break
        update = message.get("params", {}).get("update", {}) if message.get("method") else {}
        if update.get("sessionUpdate") == "agent_message_chunk":
            text.append(update.get("content", {}).get("text", ""))
            chunks += 1
    elapsed = time.perf_counter() - started
    assert "".join(text).endswith(answer), "".join(text)[-50:]
    agent.add(f"{DELTAS:,} deltas", elapsed)
    agent.add("chunks for them", chunks)


def served_by(stub: int) -> int | None:
    """The warm child serving `stub`: the other process writing to the stub's stdout pipe
    (None for a process that serves itself)."""
    try:
        pipe = os.readlink(f"/proc/{stub}/fd/1")
    except OSError:
        return None
    if not pipe.startswith("pipe:"):
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (stub, os.getpid()):
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:  # one closed while read skips that descriptor, not the process
            with contextlib.suppress(OSError):
                if os.readlink(fd) == pipe:
                    return int(entry.name)
    return None


def process_cpu(pid: int, child: int | None) -> float:
    """CPU of `pid` and of the warm child serving it, if any (0 for one already gone)."""
    total = cpu_seconds(pid)
    if child is not None:
        with contextlib.suppress(OSError):
            total += cpu_seconds(child)
    return total


async def ready_session_cpu(agent: Agent, cwd: Path, quiet: float = 0.3, limit: float = 20.0) -> None:
    """CPU from spawn until, after answering session/new, the process has stopped using any."""
    client = await spawn(agent, cwd)
    client.stdin.write(ZED_INITIALIZE + b"\n")
    await client.answer(0)
    await open_session(client, cwd)
    pid = client.process.pid
    child = served_by(pid)
    if WARM_LABEL in agent.name and child is None:
        agent.notes.add("a spawn was not served warm")
    deadline = time.monotonic() + limit
    last, since = process_cpu(pid, child), time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        now = process_cpu(pid, child)
        if now > last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    agent.add("CPU to a ready session", last)
    await client.close()


def initialize_only_cpu(agent: Agent, cwd: Path) -> None:
    """CPU of a process that answers initialize and exits at the end of its input."""
    process = subprocess.Popen(
        agent.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=agent.env,
        cwd=cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(ZED_INITIALIZE + b"\n")
    process.stdin.flush()
    assert b'"result"' in process.stdout.readline()
    child = served_by(process.pid)
    child_cpu = 0.0
    process.stdin.close()
    deadline = time.monotonic() + EXIT_GRACE
    while True:  # wait4 reaps it with its rusage (Popen.wait would reap it without)
        if child is not None:  # the warm child is not ours to reap: its last reading counts
            with contextlib.suppress(OSError):
                child_cpu = cpu_seconds(child)
        pid, _, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:  # codex-acp 0.16 does not exit at the end of its input
            agent.notes.add(f"did not exit at the end of input within {EXIT_GRACE:g} s (SIGTERM)")
            process.terminate()
            _, _, usage = os.wait4(process.pid, 0)
            break
        time.sleep(0.01)
    process.returncode = 0
    agent.add("CPU, initialize only", usage.ru_utime + usage.ru_stime + child_cpu)


# -- the run -------------------------------------------------------------------------------------


async def measure(runs: int, before: Path | None) -> int:
    load = os.getloadavg()
    binary = codex_acp()
    if binary is None:
        print("codex-acp could not be installed (npm, linux x64): nothing to compare with")
        return 2
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        cwd = home / "project"
        cwd.mkdir()
        codex = codex_agent(binary, home, fake.openai_base_url)
        runtime = home / "run"
        runtime.mkdir(mode=0o700)
        sources = {WARM_LABEL: (ROOT, "1"), "cold": (ROOT, "0")} | (
            {"before": (before, "0")} if before else {}
        )
        agents: dict[str, list[Agent]] = {api: [] for api in API_SETTINGS}
        for api, settings in API_SETTINGS.items():
            for label, (source, warm) in sources.items():
                env = server_env(
                    home,
                    fake,
                    **{
                        "HERMES_ACP_LOG_LEVEL": "warning",
                        "HERMES_ACP_WARM": warm,
                        "XDG_RUNTIME_DIR": str(runtime),
                        **settings,
                    },
                )
                agents[api].append(Agent(f"{label} ({api})", ours(source), env))
        everyone = [codex] + [agent for group in agents.values() for agent in group]
        try:
            for agent in everyone:  # cold disk caches and first-run files: not counted
                await fresh_thread(agent, fake, cwd)
                agent.samples.clear()
            await warm_servers_listening(runtime, len(API_SETTINGS))
            for _ in range(runs):
                for agent in everyone:
                    await fresh_thread(agent, fake, cwd)
                    await ready_session_cpu(agent, cwd)
                    initialize_only_cpu(agent, cwd)
        finally:
            stop_warm_servers(runtime)
    return report(codex, agents, load, list(sources))


async def warm_servers_listening(runtime: Path, count: int, limit: float = 60.0) -> None:
    """Until the priming spawns' warm servers (one per API) listen."""
    deadline = time.monotonic() + limit
    while len(list((runtime / "hermes-acp").glob("*.sock"))) < count:
        if time.monotonic() > deadline:
            raise RuntimeError("the warm servers did not start")
        await asyncio.sleep(0.05)


def stop_warm_servers(runtime: Path) -> None:
    """SIGTERM the warm servers started here (found by their runtime dir) and wait for them."""
    marker = f"XDG_RUNTIME_DIR={runtime}\0".encode()
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or b"hermes_acp.warm.serve" not in (entry / "cmdline").read_bytes():
                continue
            if marker in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGTERM)
                while Path(f"/proc/{entry.name}").exists() and "Z" not in _state(entry):
                    time.sleep(0.01)
        except OSError:
            continue


def _state(entry: Path) -> str:
    return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]


def report(codex: Agent, agents: dict[str, list[Agent]], load: tuple[float, ...], labels: list[str]) -> int:
    """A table per API: each measure's median for every hermes-acp variant (its ratio to
    codex-acp in brackets) and codex-acp's. Targets are checked on the warm variant."""
    print(f"load average before: {load[0]:.1f}, after: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    measures = (
        "initialize",
        "session/new",
        "first chunk",
        "CPU to a ready session",
        "CPU, initialize only",
        f"{DELTAS:,} deltas",
        "chunks for them",
    )
    missed = False
    for api, group in agents.items():
        print(
            f"\n{api}: median of the runs"
            + "".join(f"{label:>22}" for label in labels)
            + f"{'codex-acp':>12}"
        )
        for measure in measures:
            reference = codex.median(measure)
            cells = []
            for agent in group:
                mine = agent.median(measure)
                ratio = mine / reference
                cell = f"{_shown(mine, measure)} ({ratio:.2f}x)"
                if WARM_LABEL in agent.name:
                    target = TARGETS.get(measure)
                    if (target is not None and ratio > target) or (
                        measure == "CPU, initialize only" and mine >= INIT_ONLY_CPU_LIMIT
                    ):
                        cell += " !"
                        missed = True
                cells.append(cell)
            print(
                f"{measure:<36}"
                + "".join(f"{cell:>22}" for cell in cells)
                + f"{_shown(reference, measure):>12}"
            )
    for agent in [codex, *(a for group in agents.values() for a in group)]:
        for note in sorted(agent.notes):
            print(f"{agent.name}: {note}")
    print("targets (warm): " + ", ".join(f"{m} <= {t}x codex-acp" for m, t in TARGETS.items()), end="")
    print(f"; initialize only < {INIT_ONLY_CPU_LIMIT} s CPU ('!' = missed)")
    return 1 if missed else 0


def _shown(value: float, measure: str) -> str:
    if measure.startswith("CPU"):
        return f"{value:.3f} s"
    if measure == "chunks for them":
        return f"{value:.0f}"
    return f"{value * 1e3:.0f} ms"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each agent and API (default 7)")
    parser.add_argument("--before", type=Path, default=None, help="another source tree to measure too")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(measure(arguments.runs, arguments.before)))
