"""The agent loop against the scripted provider server, through the real SDKs."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from hermes_core.events import (
    HistoryReplaced,
    MessageCommitted,
    Status,
    StopReason,
    TextDelta,
    ThoughtDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    UsageUpdated,
)
from hermes_core.library import StaticApprover, chat
from hermes_core.messages import Message, ToolCall
from hermes_core.policy.approval import Decision, Mode
from hermes_core.tools.base import Tool, ToolContext, ToolResult
from hermes_core.tools.builtin import default_tools
from hermes_core.tools.registry import ToolRegistry
from tests.support.agents import (
    API_SHAPES,
    ScriptedApprover,
    collect,
    ended,
    make_agent,
    of_type,
)
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.processes import wait_gone

pytestmark = pytest.mark.usefixtures("agent_test")


@pytest.fixture
def workdir(project: Path) -> Path:
    (project / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return project


def body_text(fake: FakeProvider, index: int) -> str:
    return json.dumps(fake.requests[index].body)


@pytest.mark.parametrize("provider", API_SHAPES)
async def test_a_plain_answer_streams_and_ends_the_turn(fake, workdir, provider):
    # the model waits after its first piece until that piece has streamed out
    fake.script([Reply(text="Hello there, friend.", chunk_size=4, hold_after_first_text=True)])
    agent = make_agent(fake, workdir, provider)
    events = []
    async for event in agent.run_turn("hi"):
        events.append(event)
        if isinstance(event, TextDelta) and len(of_type(events, TextDelta)) == 1:
            fake.release_stream()
    deltas = of_type(events, TextDelta)
    assert deltas[0].text == "Hell" and len(deltas) > 1
    assert "".join(d.text for d in deltas) == "Hello there, friend."
    result = ended(events)
    assert result.stop_reason is StopReason.END_TURN
    assert result.text == "Hello there, friend."
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert [e.message.role for e in of_type(events, MessageCommitted)] == ["user", "assistant"]
    assert of_type(events, TitleChanged)[0].title == "hi"
    assert of_type(events, UsageUpdated)[-1].total.input_tokens > 0


@pytest.mark.parametrize("provider", API_SHAPES)
async def test_reasoning_becomes_thought_events_never_answer_text(fake, workdir, provider):
    fake.script([Reply(reasoning="Let me think about it.", text="42")])
    events = await collect(make_agent(fake, workdir, provider).run_turn("question"))
    assert "".join(e.text for e in of_type(events, ThoughtDelta)) == "Let me think about it."
    assert "".join(e.text for e in of_type(events, TextDelta)) == "42"


@pytest.mark.parametrize("provider", API_SHAPES)
async def test_a_tool_round_trip_feeds_the_result_back(fake, workdir, provider):
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]),
            Reply(text="The file has three lines."),
        ]
    )
    agent = make_agent(fake, workdir, provider)
    events = await collect(agent.run_turn("what is in notes.txt?"))
    started = of_type(events, ToolCallStarted)[0]
    assert started.tool == "read_file" and started.kind == "read"
    assert "notes.txt" in started.title
    assert started.locations[0].path == str(workdir / "notes.txt")
    running = of_type(events, ToolCallRunning)[0]
    finished = of_type(events, ToolCallFinished)[0]
    assert started.call_id == running.call_id == finished.call_id
    assert events.index(started) < events.index(running) < events.index(finished)
    assert finished.status == "completed" and "beta" in finished.result
    assert "beta" in body_text(fake, 1)  # the model saw the tool result
    assert ended(events).stop_reason is StopReason.END_TURN
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "assistant"]
    assert agent.messages[2].display["title"] == started.title


class _Probe(BaseModel):
    label: str


class SlowProbe(Tool[_Probe]):
    """A read-only tool that records when it ran, to observe concurrency."""

    name = "probe"
    description = "Record the visit, once `meet` probes are under way at the same time."
    args_model = _Probe
    kind = "read"
    calls: ClassVar[list[tuple[str, float, float]]] = []
    running: ClassVar[set[str]] = set()
    meet: ClassVar[int] = 1  # probes run one after another never meet: the first waits until the cap

    def title(self, args: _Probe, workspace) -> str:
        return f"Probe {args.label}"

    async def run(self, args: _Probe, ctx: ToolContext) -> ToolResult:
        start = time.monotonic()
        SlowProbe.running.add(args.label)
        for _ in range(3000):  # 30 s: only a hang gets that far
            if len(SlowProbe.running) >= SlowProbe.meet:
                break
            await asyncio.sleep(0.01)
        SlowProbe.calls.append((args.label, start, time.monotonic()))
        return ToolResult(f"probed {args.label}")


async def test_read_only_calls_of_one_response_run_concurrently_and_return_in_order(fake, workdir):
    SlowProbe.calls.clear()
    SlowProbe.running.clear()
    SlowProbe.meet = 2
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("probe", {"label": "a"}), ToolCallSpec("probe", {"label": "b"})]),
            Reply(text="done"),
        ]
    )
    agent = make_agent(fake, workdir, tools=ToolRegistry([*default_tools(), SlowProbe()]))
    await collect(agent.run_turn("probe twice"))
    (_, a_start, a_end), (_, b_start, b_end) = sorted(SlowProbe.calls)
    assert b_start < a_end and a_start < b_end  # the two runs overlapped
    results = [m.text for m in agent.messages if m.role == "tool"]
    assert results == ["probed a", "probed b"]


async def test_edits_to_the_same_file_run_in_the_models_order(fake, workdir):
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCallSpec("patch", {"path": "notes.txt", "old_text": "beta", "new_text": "BETA"}),
                    ToolCallSpec("patch", {"path": "notes.txt", "old_text": "BETA", "new_text": "Beta!"}),
                ]
            ),
            Reply(text="edited"),
        ]
    )
    agent = make_agent(fake, workdir, settings={"default_mode": "yolo"})
    events = await collect(agent.run_turn("edit"))
    assert [f.status for f in of_type(events, ToolCallFinished)] == ["completed", "completed"]
    assert (workdir / "notes.txt").read_text() == "alpha\nBeta!\ngamma\n"


async def test_a_misspelled_tool_name_is_repaired(fake, workdir):
    fake.script([Reply(tool_calls=[ToolCallSpec("Read_File", {"path": "notes.txt"})]), Reply(text="ok")])
    events = await collect(make_agent(fake, workdir).run_turn("read"))
    finished = of_type(events, ToolCallFinished)[0]
    assert finished.status == "completed" and "gamma" in finished.result


async def test_an_unknown_tool_gets_an_error_listing_the_valid_names(fake, workdir):
    fake.script([Reply(tool_calls=[ToolCallSpec("frobnicate", {})]), Reply(text="sorry")])
    events = await collect(make_agent(fake, workdir).run_turn("go"))
    finished = of_type(events, ToolCallFinished)[0]
    assert finished.status == "failed"
    assert "Unknown tool 'frobnicate'" in finished.result and "read_file" in finished.result
    assert "Unknown tool" in body_text(fake, 1)
    assert ended(events).stop_reason is StopReason.END_TURN


async def test_invalid_json_arguments_get_an_exact_error_and_the_turn_goes_on(fake, workdir):
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("read_file", '{"path": "notes.txt"')]),
            Reply(tool_calls=[ToolCallSpec("read_file", {"offset": 2})]),
            Reply(text="gave up"),
        ]
    )
    events = await collect(make_agent(fake, workdir).run_turn("read"))
    first, second = of_type(events, ToolCallFinished)
    assert "not valid JSON" in first.result
    assert "path" in second.result and "Field required" in second.result
    assert ended(events).text == "gave up"


async def test_argument_repair_stops_after_three_attempts(fake, workdir):
    bad = Reply(tool_calls=[ToolCallSpec("read_file", "{not json")])
    fake.script([bad, bad, bad, bad, Reply(text="never reached")])
    events = await collect(make_agent(fake, workdir).run_turn("read"))
    assert len(fake.requests) == 4
    assert any(isinstance(e, Status) and "invalid tool arguments" in e.message for e in events)
    assert ended(events).stop_reason is StopReason.END_TURN


async def test_identical_duplicate_calls_run_once(fake, workdir):
    SlowProbe.calls.clear()
    SlowProbe.running.clear()
    SlowProbe.meet = 1
    same = ToolCallSpec("probe", {"label": "x"})
    fake.script([Reply(tool_calls=[same, ToolCallSpec("probe", {"label": "x"})]), Reply(text="ok")])
    agent = make_agent(fake, workdir, tools=ToolRegistry([*default_tools(), SlowProbe()]))
    events = await collect(agent.run_turn("probe"))
    assert len(SlowProbe.calls) == 1
    assert [f.result for f in of_type(events, ToolCallFinished)] == ["probed x", "probed x"]
    assert len([m for m in agent.messages if m.role == "tool"]) == 2


@pytest.mark.parametrize("provider", API_SHAPES)
async def test_a_cut_off_answer_is_continued_and_joined(fake, workdir, provider):
    fake.script([Reply(text="The first half, ", finish_reason="length"), Reply(text="and the second.")])
    agent = make_agent(fake, workdir, provider)
    events = await collect(agent.run_turn("write"))
    assert ended(events).text == "The first half, and the second."
    assert agent.messages[-1].text == "The first half, and the second."
    assert "Continue exactly where it stopped" in body_text(fake, 1)
    assert ended(events).stop_reason is StopReason.END_TURN


async def test_continuation_gives_up_after_three_tries(fake, workdir):
    fake.script([Reply(text=f"part{i} ", finish_reason="length") for i in range(4)])
    events = await collect(make_agent(fake, workdir).run_turn("write"))
    assert len(fake.requests) == 4
    assert ended(events).stop_reason is StopReason.MAX_TOKENS
    assert ended(events).text == "part0 part1 part2 part3 "


async def test_thinking_that_exhausts_the_budget_is_reported_not_looped(fake, workdir):
    fake.script([Reply(reasoning="hmm " * 20, finish_reason="length")])
    events = await collect(make_agent(fake, workdir).run_turn("think"))
    assert len(fake.requests) == 1
    assert ended(events).stop_reason is StopReason.MAX_TOKENS
    assert any(isinstance(e, Status) and "thinking" in e.message for e in events)


@pytest.mark.parametrize("provider", API_SHAPES)
async def test_a_spent_budget_gets_one_grace_call_without_tools(fake, workdir, provider):
    loop_reply = Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})])
    fake.script([loop_reply, loop_reply, Reply(text="Summary: I read the notes twice.")])
    agent = make_agent(fake, workdir, provider, settings={"max_iterations": 2})
    events = await collect(agent.run_turn("loop"))
    result = ended(events)
    assert result.stop_reason is StopReason.MAX_TURN_REQUESTS
    assert result.text.endswith("Summary: I read the notes twice.")
    assert "budget of model calls" in body_text(fake, 2)
    assert len(fake.requests) == 3


async def test_a_refusal_is_its_own_stop_reason(fake, workdir):
    fake.script([Reply(text="I can't help with that.", finish_reason="refusal")])
    events = await collect(make_agent(fake, workdir).run_turn("bad"))
    assert ended(events).stop_reason is StopReason.REFUSAL


async def test_the_model_repeating_tool_call_ids_still_gets_unique_ids(fake, workdir):
    call = ToolCallSpec("read_file", {"path": "notes.txt"}, id="call_0")
    fake.script([Reply(tool_calls=[call]), Reply(text="a"), Reply(tool_calls=[call]), Reply(text="b")])
    agent = make_agent(fake, workdir)
    first = await collect(agent.run_turn("one"))
    second = await collect(agent.run_turn("two"))
    ids = [e.call_id for e in of_type(first + second, ToolCallStarted)]
    assert len(ids) == len(set(ids)) == 2


async def test_asking_mode_asks_before_an_edit_and_a_rejection_goes_back_to_the_model(fake, workdir):
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "new.txt", "content": "x"})]),
            Reply(text="understood"),
        ]
    )
    approver = ScriptedApprover(Decision.REJECT_ONCE)
    events = await collect(make_agent(fake, workdir, approver=approver).run_turn("write"))
    assert approver.requests[0].tool == "write_file"
    assert "new.txt" in approver.requests[0].title
    assert not (workdir / "new.txt").exists()
    assert of_type(events, ToolCallFinished)[0].status == "failed"
    assert "rejected" in body_text(fake, 1)
    assert ended(events).stop_reason is StopReason.END_TURN


async def test_cancel_on_a_permission_request_ends_the_turn_cancelled_without_running(fake, workdir):
    fake.script([Reply(tool_calls=[ToolCallSpec("write_file", {"path": "new.txt", "content": "x"})])])
    agent = make_agent(fake, workdir, approver=ScriptedApprover(Decision.CANCELLED))
    events = await collect(agent.run_turn("write"))
    assert ended(events).stop_reason is StopReason.CANCELLED
    assert not (workdir / "new.txt").exists()
    assert of_type(events, ToolCallFinished)[0].status == "failed"
    assert len(fake.requests) == 1


async def test_allow_always_is_remembered_for_the_session(fake, workdir):
    write = Reply(tool_calls=[ToolCallSpec("write_file", {"path": "a.txt", "content": "1"})])
    write2 = Reply(tool_calls=[ToolCallSpec("write_file", {"path": "b.txt", "content": "2"})])
    fake.script([write, Reply(text="one"), write2, Reply(text="two")])
    approver = ScriptedApprover(Decision.ALLOW_ALWAYS)
    agent = make_agent(fake, workdir, approver=approver)
    await collect(agent.run_turn("first"))
    await collect(agent.run_turn("second"))
    assert len(approver.requests) == 1
    assert (workdir / "b.txt").read_text() == "2"


async def test_plan_mode_does_not_offer_edit_or_command_tools(fake, workdir):
    fake.script([Reply(text="Here is my plan.")])
    agent = make_agent(fake, workdir, mode=Mode.PLAN)
    await collect(agent.run_turn("plan it"))
    offered = {tool["function"]["name"] for tool in fake.requests[0].body["tools"]}
    assert "read_file" in offered
    assert "write_file" not in offered and "terminal" not in offered


async def test_a_fallback_provider_takes_over_when_the_primary_is_unauthorised(fake, workdir):
    fake.script([Reply.unauthorized(), Reply(text="from the fallback")])
    fallback = [{"provider": "openai", "model": "backup-model"}]
    agent = make_agent(fake, workdir, settings={"fallback": fallback})
    events = await collect(agent.run_turn("hi"))
    assert ended(events).text == "from the fallback"
    assert any(isinstance(e, Status) and e.kind == "falling_back" for e in events)
    assert fake.requests[1].body["model"] == "backup-model"


async def test_the_next_turn_goes_back_to_the_primary_provider(fake, workdir):
    fake.script([Reply.unauthorized(), Reply(text="fallback"), Reply(text="primary again")])
    fallback = [{"provider": "openai", "model": "backup-model"}]
    agent = make_agent(fake, workdir, settings={"fallback": fallback})
    await collect(agent.run_turn("one"))
    events = await collect(agent.run_turn("two"))
    assert ended(events).text == "primary again"
    assert [r.body["model"] for r in fake.requests] == ["gpt-4.1", "backup-model", "gpt-4.1"]


async def test_a_rate_limit_is_retried_and_reported(fake, workdir):
    fake.script([Reply.rate_limited(0.01), Reply(text="after the wait")])
    events = await collect(make_agent(fake, workdir).run_turn("hi"))
    assert ended(events).text == "after the wait"
    assert any(isinstance(e, Status) and e.kind == "retrying" for e in events)


async def test_a_context_overflow_compresses_and_retries_once(fake, workdir):
    history: list[Message] = []
    for i in range(15):
        history.append(Message(role="user", content=f"question {i}"))
        history.append(Message(role="assistant", content=f"answer {i}"))
    fake.script(
        [Reply.context_overflow(), Reply(text="SUMMARY: fifteen questions were asked."), Reply(text="fine")]
    )
    agent = make_agent(fake, workdir, messages=history, settings={"compression_keep_last": 4})
    events = await collect(agent.run_turn("and now?"))
    assert ended(events).text == "fine"
    replaced = of_type(events, HistoryReplaced)
    assert replaced and len(replaced[0].messages) < len(history)
    assert "fifteen questions" in body_text(fake, 2)
    assert "question 7" not in body_text(fake, 2)


async def test_cancelling_the_turn_closes_the_stream(fake, workdir):
    fake.script([Reply(text="word " * 200, chunk_size=5, chunk_delay=0.02)])
    agent = make_agent(fake, workdir)
    seen: list[str] = []

    async def consume():
        async for event in agent.run_turn("long"):
            if isinstance(event, TextDelta):
                seen.append(event.text)

    task = asyncio.create_task(consume())
    while len(seen) < 3:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    count = len(seen)
    await asyncio.sleep(0.1)
    assert len(seen) == count
    assert count < 100


async def test_cancelling_during_a_command_kills_it(fake, workdir):
    marker = workdir / "pid.txt"
    command = f"echo $$ > {marker}; sleep 30"
    fake.script([Reply(tool_calls=[ToolCallSpec("terminal", {"command": command})])])
    agent = make_agent(fake, workdir, settings={"default_mode": "yolo"})
    task = asyncio.create_task(collect(agent.run_turn("run")))
    for _ in range(1500):  # 30 s: only a hang gets that far
        if marker.exists() and marker.read_text().strip():
            break
        await asyncio.sleep(0.02)
    pid = int(marker.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_gone(pid, "the killed command")  # the kill is sent


async def test_each_request_extends_the_previous_one_byte_for_byte(fake, workdir):
    """Prompt caches keep hitting: history is append-only and the system prompt is fixed."""
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]),
            Reply(text="first"),
            Reply(tool_calls=[ToolCallSpec("search", {"pattern": "gamma"})]),
            Reply(text="second"),
        ]
    )
    agent = make_agent(fake, workdir)
    await collect(agent.run_turn("one"))
    await collect(agent.run_turn("two"))
    bodies = [r.body for r in fake.requests]
    for earlier, later in itertools.pairwise(bodies):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert later["tools"] == earlier["tools"]


def test_chat_returns_the_answer_text(fake, workdir):
    fake.script([Reply(text="pong")])
    agent_settings = make_agent(fake, workdir).settings
    assert (
        chat("ping", settings=agent_settings, cwd=workdir, approver=StaticApprover(Decision.ALLOW_ONCE))
        == "pong"
    )


async def test_history_with_a_dangling_tool_call_is_repaired_before_sending(fake, workdir):
    dangling = [
        Message(role="user", content="earlier"),
        Message(role="assistant", content="", tool_calls=[ToolCall("call_old", "read_file", "{}")]),
    ]
    fake.script([Reply(text="recovered")])
    events = await collect(make_agent(fake, workdir, messages=dangling).run_turn("again"))
    assert ended(events).text == "recovered"
    assert "Interrupted" in body_text(fake, 0)


async def test_files_the_user_changed_between_turns_reach_the_next_message(fake, workdir):
    from hermes_core.changes.watch import WorkspaceWatcher

    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "agent.txt", "content": "mine"})]),
            Reply(text="wrote it"),
            Reply(text="I see your edit"),
        ]
    )
    watcher = WorkspaceWatcher([workdir], debounce_ms=10, grace_ms=100)
    agent = make_agent(fake, workdir, settings={"default_mode": "yolo"}, watcher=watcher)
    await collect(agent.run_turn("write a file"))
    await asyncio.sleep(0.3)  # past the grace window: what follows is the user's
    (workdir / "notes.txt").write_text("edited by the user\n")
    for _ in range(1500):  # 30 s: only a hang gets that far
        if watcher.pending:
            break
        await asyncio.sleep(0.02)
    await collect(agent.run_turn("look again"))
    last_user = agent.messages[-2]
    assert last_user.role == "user"
    assert "notes.txt" in last_user.text
    assert "agent.txt" not in last_user.text  # the agent's own write is not reported
