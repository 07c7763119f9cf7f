"""delegate_task over the real server: children in parallel with their own cards, a
child the user cancels, the parent's cancel reaching every child, approvals that name
the child, the shared model-call budget, child transcripts stored and hidden, usage
rolled up."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import ZED_CAPABILITIES, AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHILD_USAGE = (1000, 100, 0)
PRICES = '[prices."gpt-4.1"]\ninput = 2.0\noutput = 8.0\n'


SERVER_SETUP = ServerSetup(config_toml=PRICES)


def delegate(*goals: str, call_id: str = "call_delegate") -> Reply:
    tasks = [{"goal": goal} for goal in goals]
    return Reply(tool_calls=[ToolCallSpec("delegate_task", {"tasks": tasks}, id=call_id)])


def write(path: str, call_id: str) -> Reply:
    return Reply(tool_calls=[ToolCallSpec("write_file", {"path": path, "content": "x\n"}, id=call_id)])


def card(client: AcpClient, call_id: str) -> list[dict[str, Any]]:
    return client.tool_updates(call_id)


def card_text(client: AcpClient, call_id: str) -> str:
    return "\n".join(
        c["content"]["text"]
        for u in card(client, call_id)
        for c in u.get("content") or []
        if c.get("type") == "content"
    )


def final_status(client: AcpClient, call_id: str) -> str | None:
    statuses = [u["status"] for u in card(client, call_id) if u.get("status")]
    return statuses[-1] if statuses else None


async def test_two_children_run_in_parallel_and_the_user_cancels_one(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    fake.script([delegate("ALPHA: write a.txt", "BETA: write b.txt"), Reply(text="the parent is done")])
    fake.route("ALPHA", [write("a.txt", "call_alpha"), Reply(text="alpha wrote a.txt", usage=CHILD_USAGE)])
    fake.route("BETA", [write("b.txt", "call_beta")])
    asked: dict[str, asyncio.Event] = {"Subagent 1": asyncio.Event(), "Subagent 2": asyncio.Event()}

    async def decide(params: dict[str, Any]) -> str:
        title = params["toolCall"]["title"]
        if title.startswith("Subagent 1: "):
            asked["Subagent 1"].set()
            await asked["Subagent 2"].wait()  # both children are waiting at once: parallel
            return "allow_once"
        assert title.startswith("Subagent 2: "), title
        asked["Subagent 2"].set()
        await client.wait_for(lambda: final_status(client, "call_delegate.1") == "completed")
        return "cancelled"

    client.permission = decide
    assert await client.prompt(session, "split the work") == {"stopReason": "end_turn"}

    titles = [p["toolCall"]["title"] for p in client.permission_requests[-2:]]
    assert sorted(t.split(":")[0] for t in titles) == ["Subagent 1", "Subagent 2"]
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    # One card per child: its steps as they happened, then its answer.
    assert final_status(client, "call_delegate.1") == "completed"
    assert "a.txt" in card_text(client, "call_delegate.1")
    assert "alpha wrote a.txt" in card_text(client, "call_delegate.1")
    assert final_status(client, "call_delegate.2") == "failed"
    assert final_status(client, "call_delegate") == "completed"
    # The parent model read both outcomes as the tool's result.
    result = str(fake.requests[-1].body["messages"][-1])
    assert "alpha wrote a.txt" in result and "The user cancelled this subagent" in result
    assert client.text(session).endswith("the parent is done")

    # Usage and cost of the children roll up into the parent's usage_update.
    usage = client.session_updates(session, "usage_update")[-1]
    total = usage["_meta"]["hermes"]["total"]
    assert total["input_tokens"] >= CHILD_USAGE[0] + 10
    assert usage["cost"]["amount"] >= (CHILD_USAGE[0] * 2.0 + CHILD_USAGE[1] * 8.0) / 1e6


async def test_child_transcripts_are_stored_searchable_and_not_listed(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    fake.script([delegate("GAMMA: find the zebra"), Reply(text="ok")])
    fake.route("GAMMA", [Reply(text="the zebra hides in stripes.txt")])
    assert await client.prompt(session, "delegate it") == {"stopReason": "end_turn"}

    listed = (await client.request("session/list", {"cwd": str(project)}))["sessions"]
    assert [s["sessionId"] for s in listed] == [session]

    other = (await client.new_session(project))["sessionId"]
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("session_search", {"query": "zebra stripes"})]), Reply(text="found")]
    )
    assert await client.prompt(other, "what did we find about the zebra?") == {"stopReason": "end_turn"}
    result = str(fake.requests[-1].body["messages"][-1])
    assert "Subagent: GAMMA" in result and "stripes" in result


async def test_cancelling_the_parent_cancels_every_child(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    fake.script([delegate("DELTA: write d.txt", "EPSILON: write e.txt", call_id="call_two")])
    fake.route("DELTA", [write("d.txt", "call_d")])
    fake.route("EPSILON", [write("e.txt", "call_e")])
    waiting: list[str] = []
    never = asyncio.Event()

    async def undecided(params: dict[str, Any]) -> str:
        waiting.append(params["toolCall"]["title"])
        await never.wait()
        return "allow_once"

    client.permission = undecided
    prompt = client.start_prompt(session, "two slow children")
    await client.wait_for(lambda: len(waiting) == 2)
    await client.cancel(session)
    assert await asyncio.wait_for(prompt, 30) == {"stopReason": "cancelled"}
    never.set()
    for call_id in ("call_two", "call_two.1", "call_two.2"):
        assert final_status(client, call_id) == "failed", call_id
    assert not (project / "d.txt").exists() and not (project / "e.txt").exists()


async def test_the_model_call_budget_is_shared_with_children(
    fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory, project: Path
) -> None:
    env = server_env(
        tmp_path_factory.mktemp("home"),
        fake,
        HERMES_ACP_MAX_ITERATIONS="4",
        HERMES_ACP_SUBAGENT_MAX_ITERATIONS="10",
    )
    looking = Reply(tool_calls=[ToolCallSpec("list_files", {"path": "."})])
    fake.script([delegate("ZETA: look around"), Reply(text="parent summary")])
    fake.route("ZETA", [looking, looking, looking, Reply(text="child summary"), looking])
    async with connected(env, ZED_CAPABILITIES) as (_, client):
        session = (await client.new_session(project))["sessionId"]
        before = len(fake.requests)
        assert await client.prompt(session, "look") == {"stopReason": "max_turn_requests"}
        requests = fake.requests[before:]
        # 1 parent call + 3 child calls spend the 4; each then gets one closing call without tools.
        assert len(requests) == 6
        assert "budget of model calls" in str(requests[4].body["messages"][-1])  # the child's
        assert "budget of model calls" in str(requests[5].body["messages"][-1])  # the parent's
        assert "child summary" in str(requests[5].body["messages"])
        assert client.text(session).endswith("parent summary")
