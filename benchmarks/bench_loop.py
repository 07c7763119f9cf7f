"""Our own overhead per tool round trip, against the scripted provider at zero latency.

A round trip is one model call that asks for a tool, the tool running, and the
result going back. The reference, measured in the same run against the same
server, is the bare `openai` SDK sending the agent's exact request bodies and
streaming the same replies. Our overhead is the difference: the loop, the tool,
events, approvals, history bookkeeping, building each request.

    python -m benchmarks.bench_loop
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.fake_process import FakeProviderProcess
from hermes_core.agent import Agent
from hermes_core.library import StaticApprover
from hermes_core.policy.approval import Decision
from hermes_core.workspace import LocalWorkspace, WorkspaceScope
from tests.support.agents import settings_for
from tests.support.fake_provider import Reply, ToolCallSpec
from tests.support.sdk_bodies import SDK_SHAPES, untransformed

ROUND_TRIPS = 40
REPEATS = 5
TARGET_MS = 5.0


def tool_reply(i: int) -> Reply:
    return Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt", "offset": 1 + i % 3})])


async def bare_sdk_calls(fake: FakeProviderProcess, bodies: list[dict]) -> float:
    """Seconds per call for the SDK alone sending the agent's exact request bodies and
    streaming the same replies: the HTTP, JSON and SSE work the agent cannot avoid."""
    import openai

    client = openai.AsyncOpenAI(api_key="test", base_url=fake.openai_base_url, max_retries=0)
    fake.script([*(tool_reply(i) for i in range(len(bodies) - 1)), Reply(text="done")])
    start = time.perf_counter()
    for body in bodies:
        params = untransformed(body, **SDK_SHAPES["chat_completions"])
        stream = await client.chat.completions.create(**params)
        async for _chunk in stream:
            pass
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed / len(bodies)


async def agent_round_trip(fake: FakeProviderProcess, root: Path, count: int) -> float:
    """Seconds per round trip in a real turn of `count` tool calls."""
    settings = settings_for(fake, root.parent / "home", "openai", default_mode="yolo")
    agent = Agent(
        settings=settings,
        workspace=LocalWorkspace(WorkspaceScope(root)),
        approver=StaticApprover(Decision.ALLOW_ONCE),
    )
    fake.script([*(tool_reply(i) for i in range(count)), Reply(text="done")])
    start = time.perf_counter()
    async for _event in agent.run_turn("read the notes repeatedly"):
        pass
    elapsed = time.perf_counter() - start
    await agent.aclose()
    return elapsed / (count + 1)


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, FakeProviderProcess() as fake:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "notes.txt").write_text("".join(f"line {i}\n" for i in range(200)))
        await agent_round_trip(fake, root, 3)  # warm-up: SDK import, connection pool
        refs, ours = [], []
        for _ in range(REPEATS):  # alternate, so machine load hits both alike
            seen = fake.request_count()
            ours.append(await agent_round_trip(fake, root, ROUND_TRIPS))
            bodies = fake.bodies_since(seen)
            refs.append(await bare_sdk_calls(fake, bodies))
    ref = statistics.median(refs) * 1000
    mine = statistics.median(ours) * 1000
    overhead = mine - ref
    print(f"SDK alone, same requests : {ref:7.2f} ms per call")
    print(f"agent round trip         : {mine:7.2f} ms  (ratio {mine / ref:.2f}x)")
    print(f"our overhead per trip    : {overhead:7.2f} ms  (target < {TARGET_MS} ms)")
    return 0 if overhead < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
