"""A reply that reads 12 FIFOs stalls no other session: a second session's read_file turn
while it runs, against the same turn with nothing else running, in the same run.

One real `hermes-acp --stdio`, the scripted provider in a process of its own. Session B's
turn is a `read_file` of a small file and an answer, timed from its prompt to its response.
First B runs its turns alone (the reference); then, round after round, session A gets a
reply with 12 `read_file` calls on FIFOs (`mkfifo p0..p11`, no writer: a blocking open
never returns) and B's turn starts the moment A's first call shows up. The figure is B's
median turn beside A's FIFO reply (target < 100 ms; before the fix it never answered: the
FIFO reads held every worker thread) and that median as a ratio of the lone median; the
p95 and the slowest turn are printed beside it (on a loaded machine the lone turn's own
slowest passes 100 ms). It also times the opener itself: `WorkspaceScope.read_bytes` of that small file
against the check-then-open it replaced, in this process.

    python -m benchmarks.bench_fifo [--rounds N]
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

from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from hermes_core.workspace import WorkspaceScope  # noqa: E402
from tests.support.acp_harness import NO_CAPABILITIES, AcpClient, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

TARGET_SECONDS = 0.100
FIFOS = 12


def fifo_reply(round_: int) -> list[Reply]:
    calls = [ToolCallSpec("read_file", {"path": f"p{i}"}, id=f"fifo-{round_}-{i}") for i in range(FIFOS)]
    return [Reply(tool_calls=calls), Reply(text="pipes read")]


def notes_reply(turn: int) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"}, id=f"notes-{turn}")]),
        Reply(text="ok"),
    ]


async def timed_turn(client: AcpClient, session: str, text: str) -> float:
    start = time.perf_counter()
    result = await client.prompt(session, text)
    assert result == {"stopReason": "end_turn"}, result
    return time.perf_counter() - start


def opener_cost(path: Path, repeats: int = 5_000) -> tuple[float, float]:
    """Microseconds per read of `path`: through the workspace's opener, and the way read_file
    read before it (the name checked with `WorkspaceScope.resolve`, then opened and read)."""
    scope = WorkspaceScope(path.parent)
    start = time.perf_counter()
    for _ in range(repeats):
        scope.read_bytes(path.name, 2_000_000)
    opener = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        with scope.resolve(path.name).open("rb") as handle:
            os.fstat(handle.fileno())
            handle.read()
    checked = time.perf_counter() - start
    return opener / repeats * 1e6, checked / repeats * 1e6


async def main(rounds: int) -> int:
    load = os.getloadavg()[0]
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        (project / "notes.txt").write_text("a note\n" * 20)
        for index in range(FIFOS):
            os.mkfifo(project / f"p{index}")
        fake.route("pipes", [reply for r in range(rounds) for reply in fifo_reply(r)])
        warm = 3
        fake.route("notes", [reply for t in range(warm + 2 * rounds) for reply in notes_reply(t)])
        env = server_env(home, None, HERMES_ACP_LOG_LEVEL="warning")
        env.update(OPENAI_BASE_URL=fake.openai_base_url, OPENAI_API_KEY="test")
        async with spawn_server(env, check_schema=False) as server:
            client = server.sdk_client(NO_CAPABILITIES)
            await client.initialize()
            pipes = (await client.new_session(project))["sessionId"]
            notes = (await client.new_session(project))["sessionId"]
            for turn in range(warm):
                await timed_turn(client, notes, f"notes {turn}")
            alone = [await timed_turn(client, notes, "notes") for _ in range(rounds)]
            beside: list[float] = []
            for round_ in range(rounds):
                first_call = f"fifo-{round_}-0"
                stalled = asyncio.create_task(client.prompt(pipes, "pipes"))
                await client.wait_for(lambda call=first_call: client.tool_updates(call))
                beside.append(await timed_turn(client, notes, "notes"))
                assert await stalled == {"stopReason": "end_turn"}
                failed = [u for u in client.session_updates(pipes) if u.get("status") == "failed"]
                assert len(failed) == FIFOS * (round_ + 1), "a FIFO read did not fail at once"
            await client.aclose()
        opener, checked = opener_cost(project / "notes.txt")
    lone, loaded = statistics.median(alone), statistics.median(beside)
    p95 = statistics.quantiles(beside, n=20)[-1]
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    print(f"session B's read_file turn alone: median {lone * 1e3:.1f} ms, max {max(alone) * 1e3:.1f} ms")
    print(
        f"beside a {FIFOS}-FIFO reply: median {loaded * 1e3:.1f} ms ({loaded / lone:.2f}x alone), "
        f"p95 {p95 * 1e3:.1f} ms, max {max(beside) * 1e3:.1f} ms; "
        f"target median < {TARGET_SECONDS * 1e3:.0f} ms  {'yes' if loaded < TARGET_SECONDS else 'NO'}"
    )
    print(f"the opener: {opener:.1f} us a read vs check-then-open {checked:.1f} us ({opener / checked:.2f}x)")
    return 0 if loaded < TARGET_SECONDS else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    sys.exit(asyncio.run(main(parser.parse_args().rounds)))
