"""The ACP face under a stopwatch: start-up, first chunk, streaming, cancel, memory.

Everything runs in one go against the real `hermes-acp --stdio` process and the
scripted provider on 127.0.0.1 (zero latency), and prints a table; the exit code is 1
when a target is missed. Start-up is a ratio against `bare_acp_agent.py` (the SDK
alone answering initialize), measured in alternating runs so both see the same machine.

    python -m benchmarks.bench_protocol [--runs N]

The scripted provider runs in a process of its own (`benchmarks/fake_process.py`), so
its threads never compete with the measuring client for one interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.drive import API_SETTINGS, send_prompt  # noqa: E402
from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import ServerProcess, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

BARE = (sys.executable, str(ROOT / "benchmarks" / "bare_acp_agent.py"))


@dataclass
class Result:
    name: str
    value: float
    unit: str
    target: float
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.value <= self.target


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


async def initialize(server: ServerProcess, ids: Ids, capabilities: dict[str, Any] | None = None) -> None:
    reply = await server.request(
        ids(), "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}}
    )
    assert "result" in reply, reply


async def new_session(server: ServerProcess, ids: Ids, cwd: Path) -> str:
    reply = await server.request(ids(), "session/new", {"cwd": str(cwd), "mcpServers": []})
    assert "result" in reply, reply
    return reply["result"]["sessionId"]


async def prompt_until(
    server: ServerProcess, ids: Ids, session: str, text: str, until: Callable[[dict[str, Any]], bool]
) -> tuple[int, float, float]:
    """Send a prompt; (request id, seconds to the first message matching `until`, start time)."""
    request_id = ids()
    started = time.perf_counter()
    await send_prompt(server, request_id, session, text)
    while True:
        message = await server.next_message(30)
        if until(message):
            return request_id, time.perf_counter() - started, started
        if message.get("id") == request_id and "method" not in message:
            raise AssertionError(f"the prompt ended before the awaited update: {message}")


async def finish(server: ServerProcess, request_id: int) -> dict[str, Any]:
    while True:
        message = await server.next_message(30)
        if message.get("id") == request_id and "method" not in message:
            return message


def is_update(kind: str, status: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def match(message: dict[str, Any]) -> bool:
        if message.get("method") != "session/update":
            return False
        update = message["params"]["update"]
        return update["sessionUpdate"] == kind and (status is None or update.get("status") == status)

    return match


# -- the measurements --------------------------------------------------------------------------------


async def startup(env: dict[str, str], runs: int) -> Result:
    async def once(command: tuple[str, ...] | None) -> float:
        started = time.perf_counter()
        async with spawn_server(env, command=command, check_schema=False) as server:
            await initialize(server, Ids())
            elapsed = time.perf_counter() - started
        return elapsed

    ours: list[float] = []
    bare: list[float] = []
    await once(None)  # the first start pays for cold disk caches; not counted
    for _ in range(runs):
        bare.append(await once(BARE))
        ours.append(await once(None))
    ratio = statistics.median(ours) / statistics.median(bare)
    detail = (
        f"hermes {statistics.median(ours) * 1e3:.0f} ms vs bare SDK {statistics.median(bare) * 1e3:.0f} ms"
    )
    return Result("spawn -> initialize response (ratio to bare SDK)", ratio, "x", 1.15, detail)


async def first_chunk(
    server: ServerProcess, ids: Ids, fake: FakeProviderProcess, session: str, runs: int
) -> Result:
    samples = []
    for i in range(runs + 3):
        fake.script([Reply(text="Hello from the model.")])
        request_id, elapsed, _ = await prompt_until(
            server, ids, session, f"hi {i}", is_update("agent_message_chunk")
        )
        await finish(server, request_id)
        if i >= 3:  # the first prompts warm up connections and caches
            samples.append(elapsed)
    median = statistics.median(samples)
    return Result("prompt -> first agent_message_chunk (median)", median * 1e3, "ms", 20, f"{runs} prompts")


async def many_deltas(
    server: ServerProcess,
    ids: Ids,
    fake: FakeProviderProcess,
    session: str,
    api: str = "",
    target: float = 1.0,
) -> Result:
    count = 10_000
    fake.script([Reply(text="x" * count, chunk_size=1)])
    request_id = ids()
    started = time.perf_counter()
    await send_prompt(server, request_id, session, "stream")
    received = 0  # characters: a chunk carries every delta that arrived since the last one
    while True:
        message = await server.next_message(60)
        if is_update("agent_message_chunk")(message):
            received += len(message["params"]["update"]["content"]["text"])
        elif message.get("id") == request_id and "method" not in message:
            break
    elapsed = time.perf_counter() - started
    assert received == count, f"{received} characters arrived, not {count}"
    label = f" ({api})" if api else ""
    return Result(f"{count:,} streamed text deltas reach the client{label}", elapsed, "s", target)


# The other API shapes, each streaming the same 10,000 deltas in its own wire format.
OTHER_APIS = ("responses", "anthropic_messages")


async def many_deltas_per_api(env: dict[str, str], fake: FakeProviderProcess, cwd: Path) -> list[Result]:
    results = []
    for api in OTHER_APIS:
        api_env = {**env, **API_SETTINGS[api]}
        async with spawn_server(api_env, check_schema=False) as server:
            ids = Ids()
            await initialize(server, ids)
            session = await new_session(server, ids, cwd)
            fake.script([Reply(text="warm")])  # the first turn loads the SDK; not counted
            chunk = is_update("agent_message_chunk")
            request_id, _, _ = await prompt_until(server, ids, session, "hi", chunk)
            await finish(server, request_id)
            results.append(await many_deltas(server, ids, fake, session, api, 0.5))
    return results


async def provider_alone(env: dict[str, str], fake: FakeProviderProcess) -> Result:
    """The same 10,000 deltas through the provider alone, in this process: the part of the
    end-to-end time that belongs to the provider adapter and its SDK, not to the ACP face."""
    from hermes_core.config import load_settings
    from hermes_core.messages import Message
    from hermes_core.providers.base import ModelRequest
    from hermes_core.providers.resolve import build_chain

    provider = build_chain(load_settings(env))[0]
    fake.script([Reply(text="x" * 10_000, chunk_size=1)])
    started = time.perf_counter()
    async for _ in provider.stream(ModelRequest(system="", messages=[Message(role="user", content="go")])):
        pass
    elapsed = time.perf_counter() - started
    await provider.aclose()
    return Result("  of which: the provider adapter alone (info)", elapsed, "s", float("inf"))


async def face_alone() -> Result:
    """The same 10,000 deltas through the ACP face alone: event translation, the SDK
    connection and our transport, written to a pipe another process drains."""
    import os

    from acp.connection import Connection

    from hermes_acp.bridge.events import EventTranslator
    from hermes_acp.startup.fd_transport import open_fd_transport
    from hermes_core.events import TextDelta

    read_fd, write_fd = os.pipe()
    sink = await asyncio.create_subprocess_exec("cat", stdin=read_fd, stdout=asyncio.subprocess.DEVNULL)
    os.close(read_fd)
    input_read, input_write = os.pipe()
    transport = await open_fd_transport(input_read, write_fd)

    async def nothing(method: str, params: Any, is_notification: bool) -> None:
        return None

    connection = Connection(nothing, transport, listening=False)
    translator = EventTranslator("bench", terminal_meta=False, cwd="/")
    started = time.perf_counter()
    for _ in range(10_000):
        for params in translator.translate(TextDelta("x")):
            await connection.send_notification("session/update", params)
    elapsed = time.perf_counter() - started
    await transport.close()
    for fd in (write_fd, input_read, input_write):
        os.close(fd)
    await asyncio.wait_for(sink.wait(), 5)
    return Result("  of which: the ACP face alone (info)", elapsed, "s", float("inf"))


async def cancel_streaming(
    server: ServerProcess, ids: Ids, fake: FakeProviderProcess, session: str, runs: int
) -> Result:
    samples = []
    for _ in range(runs):
        fake.script([Reply(text="word " * 2000, chunk_size=5, chunk_delay=0.002)])
        request_id, _, _ = await prompt_until(server, ids, session, "essay", is_update("agent_message_chunk"))
        samples.append(await cancel_time(server, session, request_id))
    return Result("cancel -> prompt response, streaming (median)", statistics.median(samples) * 1e3, "ms", 50)


async def cancel_command(
    server: ServerProcess, ids: Ids, fake: FakeProviderProcess, session: str, runs: int
) -> Result:
    samples = []
    for _ in range(runs):
        fake.script([Reply(tool_calls=[ToolCallSpec("terminal", {"command": "sleep 30"})])])
        running = is_update("tool_call_update", "in_progress")
        request_id, _, _ = await prompt_until(server, ids, session, "sleep", running)
        await asyncio.sleep(0.05)  # the process is really running by now
        samples.append(await cancel_time(server, session, request_id))
    return Result(
        "cancel -> prompt response, running command (median)", statistics.median(samples) * 1e3, "ms", 50
    )


async def cancel_time(server: ServerProcess, session: str, request_id: int) -> float:
    started = time.perf_counter()
    await server.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    reply = await finish(server, request_id)
    elapsed = time.perf_counter() - started
    assert reply["result"]["stopReason"] == "cancelled", reply
    return elapsed


async def memory(env: dict[str, str], cwd: Path, sessions: int) -> list[Result]:
    async with spawn_server(env, check_schema=False) as server:
        ids = Ids()
        await initialize(server, ids)
        after_init = server.rss_kb()
        await new_session(server, ids, cwd)
        await asyncio.sleep(1.0)  # warm-up imports and the model list are done
        one = server.rss_kb()
        for _ in range(sessions):
            await new_session(server, ids, cwd)
        await asyncio.sleep(0.5)
        many = server.rss_kb()
    per_session = (many - one) / sessions / 1024
    return [
        Result(
            "RSS after initialize",
            after_init / 1024,
            "MB",
            float("inf"),
            f"{one / 1024:.1f} MB with one session",
        ),
        Result(f"RSS per extra idle session (over {sessions})", per_session, "MB", 2.0),
    ]


async def main(runs: int) -> int:
    results: list[Result] = []
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        env = server_env(home, fake, HERMES_ACP_LOG_LEVEL="warning")
        results.append(await startup(env, runs))
        async with spawn_server(env, check_schema=False) as server:
            ids = Ids()
            await initialize(server, ids)
            session = await new_session(server, ids, project)
            await server.request(ids(), "session/set_mode", {"sessionId": session, "modeId": "yolo"})
            results.append(await first_chunk(server, ids, fake, session, 30))
            results.append(await many_deltas(server, ids, fake, session))
            results.append(await provider_alone(env, fake))
            results.append(await face_alone())
            results.append(await cancel_streaming(server, ids, fake, session, 10))
            results.append(await cancel_command(server, ids, fake, session, 10))
        results += await many_deltas_per_api(env, fake, project)
        results += await memory(env, project, 100)

    width = max(len(r.name) for r in results)
    print(f"{'measure':<{width}}  {'value':>10}  {'target':>10}  ok")
    for r in results:
        target = "-" if r.target == float("inf") else f"<= {r.target:g} {r.unit}"
        verdict = "yes" if r.ok else "NO"
        print(f"{r.name:<{width}}  {r.value:>7.3f} {r.unit:<2}  {target:>10}  {verdict}  {r.detail}")
    missed = [r for r in results if not r.ok]
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="start-up runs of each program (default 11)")
    sys.exit(asyncio.run(main(parser.parse_args().runs)))
