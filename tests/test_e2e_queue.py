"""Prompts while a turn runs: cancel-then-ask, the queue, /steer, /queue, and the partial
answer a cancel leaves in the history."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient, ServerProcess
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


class HeldPermission:
    """Answers the permission request only when released: a turn that waits for the user."""

    def __init__(self, client: AcpClient) -> None:
        self.release = asyncio.Event()
        self.asked = asyncio.Event()
        client.permission = self.answer

    async def answer(self, params: dict[str, Any]) -> str:
        self.asked.set()
        await self.release.wait()
        return "allow_once"


def write_call(name: str) -> Reply:
    return Reply(tool_calls=[ToolCallSpec("write_file", {"path": name, "content": "x"})])


async def a_held_write(
    client: AcpClient, fake: FakeProvider, session: str, name: str, *then: Reply
) -> tuple[HeldPermission, asyncio.Task[dict[str, Any]]]:
    """A turn writing `name`, waiting on the user's answer; `then`, the model's next replies."""
    held = HeldPermission(client)
    fake.script([write_call(name), *then])
    first = client.start_prompt(session, f"write {name}")
    await asyncio.wait_for(held.asked.wait(), 30)
    return held, first


async def wait_until_queued(client: AcpClient, session: str, text: str) -> str:
    """Ask /queue (which answers at once, beside the turn) until the prompt is listed."""
    answer = ""
    while text not in answer:
        before = len(client.text(session))
        assert await client.prompt(session, "/queue") == {"stopReason": "end_turn"}
        answer = client.text(session)[before:]
    return answer


def sent_to_model(fake: FakeProvider, index: int = -1) -> str:
    return str(fake.requests[index].body["messages"])


async def test_a_prompt_right_after_a_cancel_waits_for_the_ending_turn_and_runs(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, session: str
) -> None:
    fake.script([Reply(text="word " * 400, chunk_size=5, chunk_delay=0.01), Reply(text="the new answer")])
    first = client.start_prompt(session, "write an essay")
    await client.wait_for(lambda: client.session_updates(session, "agent_message_chunk"))
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "no, do this instead"}]}
    await server.send_together(  # as Zed sends them when the user interrupts with a new message
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}},
        {"jsonrpc": "2.0", "id": "after-cancel", "method": "session/prompt", "params": prompt},
    )
    assert await asyncio.wait_for(first, 30) == {"stopReason": "cancelled"}
    reply = await server.response_to("after-cancel")
    assert reply["result"]["stopReason"] == "end_turn", reply
    assert client.text(session).endswith("the new answer")
    # The model saw what the user saw of the cancelled answer, marked as interrupted.
    sent = sent_to_model(fake)
    assert "word" in sent and "Interrupted by the user" in sent and "no, do this instead" in sent


async def test_a_prompt_during_a_turn_is_queued_shown_by_queue_and_runs_after_it(
    client: AcpClient, fake: FakeProvider, session: str, tmp_path: Path
) -> None:
    held, first = await a_held_write(
        client, fake, session, "a.txt", Reply(text="wrote it"), Reply(text="second answer")
    )
    second = client.start_prompt(session, "then tell me about b")
    await wait_until_queued(client, session, "then tell me about b")
    assert not second.done()
    held.release.set()
    assert await asyncio.wait_for(first, 30) == {"stopReason": "end_turn"}
    assert await asyncio.wait_for(second, 30) == {"stopReason": "end_turn"}
    assert "wrote it" in sent_to_model(fake) and "then tell me about b" in sent_to_model(fake)
    assert client.text(session).endswith("second answer")


async def test_queue_lists_the_waiting_prompts(client: AcpClient, fake: FakeProvider, session: str) -> None:
    held, first = await a_held_write(
        client, fake, session, "c.txt", Reply(text="done"), Reply(text="answer two")
    )
    second = client.start_prompt(session, "what is in c.txt?")
    answer = await wait_until_queued(client, session, "what is in c.txt?")
    assert answer.startswith("1 prompt waiting") and "1. what is in c.txt?" in answer
    held.release.set()
    assert await asyncio.wait_for(first, 30) == {"stopReason": "end_turn"}
    assert await asyncio.wait_for(second, 30) == {"stopReason": "end_turn"}
    before = len(client.text(session))
    assert await client.prompt(session, "/queue") == {"stopReason": "end_turn"}
    assert client.text(session)[before:] == "Nothing is waiting."


async def test_steer_reaches_the_running_turn_at_its_next_model_call(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    held, first = await a_held_write(client, fake, session, "d.txt", Reply(text="done, in French"))
    calls_before = len(fake.requests)
    assert await client.prompt(session, "/steer answer in French") == {"stopReason": "end_turn"}
    assert "Added to the running turn" in client.text(session)
    held.release.set()
    assert await asyncio.wait_for(first, 30) == {"stopReason": "end_turn"}
    assert len(fake.requests) == calls_before + 1  # the steer rode on the turn's next call
    messages = fake.requests[-1].body["messages"]
    assert messages[-1]["role"] == "user" and "answer in French" in str(messages[-1]["content"])
    assert "Done" not in str(messages[:-1])  # appended at the end: the cached prefix is unchanged


async def test_a_cancel_answers_the_prompts_queued_before_it(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    _, first = await a_held_write(client, fake, session, "e.txt", Reply(text="after the cancel"))
    queued = client.start_prompt(session, "queued before the cancel")
    await wait_until_queued(client, session, "queued before the cancel")
    await client.cancel(session)
    assert await asyncio.wait_for(first, 30) == {"stopReason": "cancelled"}
    assert await asyncio.wait_for(queued, 30) == {"stopReason": "cancelled"}
    client.permission = "allow_once"
    assert await client.prompt(session, "and now?") == {"stopReason": "end_turn"}
    assert "queued before the cancel" not in sent_to_model(fake)


async def test_a_reloaded_session_shows_the_interrupted_answer(
    client: AcpClient, fake: FakeProvider, session: str, tmp_path: Path
) -> None:
    fake.script([Reply(text="partial " * 300, chunk_size=8, chunk_delay=0.01)])
    seen_before = len(client.text(session))
    prompt = client.start_prompt(session, "long answer please")
    await client.wait_for(lambda: client.text(session)[seen_before:].count("partial") >= 3)
    await client.cancel(session)
    assert await asyncio.wait_for(prompt, 30) == {"stopReason": "cancelled"}
    seen = client.text(session)[seen_before:]
    await client.request("session/close", {"sessionId": session})
    before = len(client.updates)
    await client.request(
        "session/load", {"sessionId": session, "cwd": str(tmp_path / "project"), "mcpServers": []}
    )
    replayed = "".join(
        u["update"]["content"].get("text", "")
        for u in client.updates[before:]
        if u["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert replayed.endswith("[Interrupted by the user.]")
    assert seen.strip() in replayed  # what the user saw before the cancel


async def test_steer_with_no_turn_running_is_a_prompt(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    fake.script([Reply(text="on it")])
    assert await client.prompt(session, "/steer rename the module") == {"stopReason": "end_turn"}
    assert fake.requests[-1].body["messages"][-1] == {"role": "user", "content": "rename the module"}
    assert client.text(session).endswith("on it")


async def test_a_queued_prompt_reports_only_its_own_tokens(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    """It waited behind a turn of 16 + 8 tokens and used 10 + 5 itself: its usage is 15."""
    first_done, second_done = Reply(text="first done", usage=(6, 3, 0)), Reply(text="second done")
    held, first = await a_held_write(client, fake, session, "queued-usage.txt", first_done, second_done)
    second = client.start_prompt(session, "and then this")
    await wait_until_queued(client, session, "and then this")
    held.release.set()
    assert await asyncio.wait_for(first, 30) == {"stopReason": "end_turn"}
    assert await asyncio.wait_for(second, 30) == {"stopReason": "end_turn"}
    own = client.prompt_usage[session][-1]
    assert own is not None and (own["inputTokens"], own["outputTokens"], own["totalTokens"]) == (10, 5, 15)
