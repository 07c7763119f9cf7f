"""Start-up and rest, against a native agent measured in the same run.

- spawn -> `initialize` answer (the Zed payload), alternating runs with the reference:
  codex-acp's linux-x64 binary (a native ACP agent) when npm can install it into the
  cache, otherwise the interpreter floor (`python -c pass`) + 100 ms;
- RSS once `initialize` has settled and once the first `session/new` has, per provider;
- the first prompt of a fresh process, sent right after `session/new`: the issue's figure,
  the model's first byte -> the first chunk (the fake, in its own process, records when
  the request arrives on the same monotonic clock; it answers at once); and prompt ->
  first chunk against a later turn of the same process (what a cold process adds, model
  call included); beside it, how long the `session/new` sent right after the
  `initialize` answer took (the warm-up's order trades one for the other).

    python -m benchmarks.bench_startup [--runs N] [--before DIR]

`--before DIR` also measures the server from another source tree (e.g. `git archive
<commit> | tar -x -C DIR`), in the same alternation, for before/after tables. The exit
code is 1 when a target is missed. Prints the machine's load: the box is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_protocol import Result  # noqa: E402
from benchmarks.drive import API_SETTINGS, send_prompt  # noqa: E402
from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import ServerProcess, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply  # noqa: E402

ZED_INITIALIZE = (ROOT / "tests" / "fixtures" / "zed-initialize.json").read_bytes().strip()
CODEX_PACKAGE = "@zed-industries/codex-acp-linux-x64"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hermes-acp-bench"
FLOOR_MARGIN = 0.100


# -- the reference ---------------------------------------------------------------------------------


def codex_acp() -> Path | None:
    """The codex-acp binary, installed into the cache with npm on first use."""
    binary = CACHE / "node_modules" / "@zed-industries" / "codex-acp-linux-x64" / "bin" / "codex-acp"
    if binary.is_file():
        return binary
    npm = shutil.which("npm")
    if npm is None or sys.platform != "linux":
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-save", "--prefix", str(CACHE), CODEX_PACKAGE]
    try:
        subprocess.run(command, capture_output=True, timeout=300, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return binary if binary.is_file() else None


# -- measurements ----------------------------------------------------------------------------------


async def spawn_to_initialize(command: tuple[str, ...], env: dict[str, str]) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(ZED_INITIALIZE + b"\n")
    await process.stdin.drain()
    line = await process.stdout.readline()
    elapsed = time.perf_counter() - started
    assert b'"result"' in line, line
    process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), 10)
    except TimeoutError:
        process.kill()
        await process.wait()
    return elapsed


async def interpreter_floor(runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        await process.wait()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) + FLOOR_MARGIN


def ours(source: Path) -> tuple[str, ...]:
    if source == ROOT:
        return (sys.executable, "-m", "hermes_acp", "--stdio")
    # The engine's folder `core/` installs as `hermes_core` (setup.py), and this venv's editable
    # finder maps that name to ROOT's `core/`: bind it to the other tree's folder first, or a
    # `--before` run measures that tree's protocol side on this tree's engine.
    engine = source / "core"
    bind_engine = (
        "import importlib.util; "
        f"spec = importlib.util.spec_from_file_location('hermes_core', {str(engine / '__init__.py')!r}, "
        f"submodule_search_locations=[{str(engine)!r}]); "
        "engine = importlib.util.module_from_spec(spec); sys.modules['hermes_core'] = engine; "
        "spec.loader.exec_module(engine); "
        if (engine / "__init__.py").is_file()
        else ""
    )
    return (
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(source)!r}); {bind_engine}"
        "from hermes_acp.cli import main; sys.exit(main())",
        "--stdio",
    )


async def startup(env: dict[str, str], runs: int, before: Path | None) -> list[Result]:
    codex = codex_acp()
    programs: dict[str, tuple[str, ...]] = {"hermes-acp": ours(ROOT)}
    if before is not None:
        programs["hermes-acp (before)"] = ours(before)
    if codex is not None:
        programs["codex-acp"] = (str(codex),)
    samples: dict[str, list[float]] = {name: [] for name in programs}
    for command in programs.values():  # cold disk caches: not counted
        await spawn_to_initialize(command, env)
    for _ in range(runs):
        for name, command in programs.items():
            samples[name].append(await spawn_to_initialize(command, env))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    if codex is not None:
        reference, label = medians["codex-acp"], "codex-acp"
    else:
        reference, label = await interpreter_floor(runs), "python -c pass + 100 ms"
    mine = medians["hermes-acp"]
    detail = ", ".join(f"{name} {value * 1e3:.0f} ms" for name, value in medians.items())
    results = [
        Result("spawn -> initialize answer (median)", mine * 1e3, "ms", 150, detail),
        Result(
            f"spawn -> initialize, ratio to {label}",
            mine / reference,
            "x",
            3.0,
            f"{label} {reference * 1e3:.0f} ms",
        ),
    ]
    if before is not None:
        results.append(
            Result("spawn -> initialize, ratio to before", mine / medians["hermes-acp (before)"], "x", 1.0)
        )
    return results


async def settled_rss(server: ServerProcess, quiet: float = 0.6, limit: float = 15.0) -> float:
    """RSS in MB once it has not grown for `quiet` seconds (the warm-up is done)."""
    deadline = time.monotonic() + limit
    last, since = server.rss_kb(), time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        now = server.rss_kb()
        if now > last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last / 1024


async def request(server: ServerProcess, request_id: int, method: str, params: dict[str, Any]) -> Any:
    reply = await server.request(request_id, method, params)
    assert "result" in reply, reply
    return reply["result"]


async def fresh_process(
    env: dict[str, str],
    fake: FakeProviderProcess,
    cwd: Path,
    label: str,
    rss: bool,
    source: Path = ROOT,
) -> list[Result]:
    """RSS at rest after initialize and after session/new (when `rss`); otherwise the first
    prompt sent right after session/new, against a later one."""
    command = None if source == ROOT else ours(source)
    if source != ROOT:
        label += ", before"
    async with spawn_server(env, check_schema=False, command=command) as server:
        await server.send_line(ZED_INITIALIZE)
        await server.next_message(30)
        results: list[Result] = []
        if rss:
            after_init = await settled_rss(server)
        asked = time.perf_counter()
        session = (await request(server, 1, "session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
        new_session = time.perf_counter() - asked
        if rss:
            after_new = await settled_rss(server)
            results.append(Result(f"RSS after initialize ({label})", after_init, "MB", 45))
            results.append(Result(f"RSS after session/new ({label})", after_new, "MB", 55))
            return results
        cold, after_model = await first_chunk(server, fake, session, 10)
        warm = min([(await first_chunk(server, fake, session, 11 + i))[0] for i in range(5)])
        results.append(
            Result(
                f"first prompt of a fresh process -> first chunk, after the model's first byte ({label})",
                after_model * 1e3,
                "ms",
                150,
                f"prompt -> first chunk {cold * 1e3:.0f} ms",
            )
        )
        results.append(
            Result(
                f"first prompt of a fresh process -> first chunk, over a warm turn ({label})",
                (cold - warm) * 1e3,
                "ms",
                math.inf,  # shown beside the figure, not judged
                f"cold {cold * 1e3:.0f} ms, warm {warm * 1e3:.0f} ms;"
                f" session/new right after initialize {new_session * 1e3:.0f} ms;"
                f" the two together {(new_session + cold) * 1e3:.0f} ms",
            )
        )
        return results


async def first_chunk(
    server: ServerProcess, fake: FakeProviderProcess, session: str, request_id: int
) -> tuple[float, float]:
    """Prompt -> first chunk, and the model's first byte -> first chunk: the zero-latency
    fake answers as its request arrives, so the arrival it records (same clock) is the
    first byte, give or take the fake writing its headers (which only adds to the figure)."""
    fake.script([Reply(text="Hello from the model.")])
    before = fake.request_count()
    started = time.perf_counter()
    await send_prompt(server, request_id, session, "hi")
    first: float | None = None
    while True:
        message = await server.next_message(60)
        update = message.get("params", {}).get("update", {}) if message.get("method") else {}
        if first is None and update.get("sessionUpdate") == "agent_message_chunk":
            first = time.perf_counter()
        if message.get("id") == request_id and "method" not in message:
            assert "result" in message, message
            assert first is not None, "the turn ended without a chunk"
            (model_called,) = fake.arrival_times_since(before)
            return first - started, first - model_called


def provider_env(home: Path, fake: FakeProviderProcess, provider: dict[str, str]) -> dict[str, str]:
    return server_env(home, fake, HERMES_ACP_LOG_LEVEL="warning", **provider)


async def main(runs: int, before: Path | None) -> int:
    load = os.getloadavg()
    results: list[Result] = []
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        results += await startup(provider_env(home, fake, API_SETTINGS["chat_completions"]), runs, before)
        sources = [ROOT] if before is None else [ROOT, before]
        for label, provider in API_SETTINGS.items():
            env = provider_env(home, fake, provider)
            for source in sources:
                results += await fresh_process(env, fake, project, label, rss=True, source=source)
            for source in sources:
                cold = [
                    await fresh_process(env, fake, project, label, rss=False, source=source) for _ in range(3)
                ]
                for rows in zip(*cold, strict=True):  # each row's median of 3
                    results.append(sorted(rows, key=lambda r: r.value)[1])

    print(f"load average before: {load[0]:.1f}, after: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    width = max(len(r.name) for r in results)
    print(f"{'measure':<{width}}  {'value':>10}  {'target':>10}  ok")
    for r in results:
        verdict = "yes" if r.ok else "NO"
        target = f"<= {r.target:g}"
        print(f"{r.name:<{width}}  {r.value:>7.2f} {r.unit:<2}  {target:>10}  {verdict}  {r.detail}")
    return 1 if any(not r.ok for r in results) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="start-up runs of each program (default 15)")
    parser.add_argument("--before", type=Path, default=None, help="another source tree to measure too")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.runs, arguments.before)))
