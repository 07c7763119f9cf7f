"""Core events -> session/update, sent through a real SDK connection and checked against the schema."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from hermes_acp.bridge.channel import send_updates
from hermes_acp.bridge.events import EventTranslator, plan_update
from hermes_acp.session.replay import replay_conversation, replay_message
from hermes_core.events import (
    FileDiff,
    Location,
    MessageCommitted,
    PlanEntry,
    PlanUpdated,
    Status,
    StepFinished,
    StopReason,
    TextDelta,
    ThoughtDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallRunning,
    ToolCallStarted,
    TurnEnded,
    UsageUpdated,
)
from hermes_core.loop.tool_runner import tool_display
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall
from hermes_core.models import Usage
from tests.support.bridge_pair import BridgePair, open_pair
from tests.support.schema import validate

SID = "sess-1"
CWD = "/work/project"


@pytest.fixture
async def pair():
    pair = await open_pair()
    yield pair
    await pair.aclose()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def translator(*, terminal_meta: bool = False, clock: FakeClock | None = None) -> EventTranslator:
    if clock is None:
        return EventTranslator(SID, terminal_meta=terminal_meta, cwd=CWD)
    return EventTranslator(SID, terminal_meta=terminal_meta, cwd=CWD, clock=clock)


async def deliver(pair: BridgePair, params: list[dict]) -> list[dict]:
    """Send through the real connection; what the editor received (validated by the pair)."""
    for p in params:
        validate("SessionNotification", p)
    before = len(pair.updates)
    await send_updates(pair.agent, params)
    await pair.settle()
    return pair.updates[before:]


def run(t: EventTranslator, *events) -> list[dict]:
    return [params for event in events for params in t.translate(event)]


def text_of(update: dict) -> str:
    return "".join(c["content"]["text"] for c in update.get("content", []) if c["type"] == "content")


EDIT = ToolCallStarted(
    call_id="call-1",
    tool="write_file",
    title="Write src/new.py",
    kind="edit",
    arguments={"path": "src/new.py", "content": "print('hi')\n"},
    locations=(Location("/work/project/src/new.py", 1),),
)


async def test_text_and_thought_deltas_become_message_and_thought_chunks(pair):
    t = translator()
    got = await deliver(pair, run(t, ThoughtDelta("Let me look."), TextDelta("Hello "), TextDelta("world")))
    message_id = got[1]["messageId"]
    thought_id = got[0]["messageId"]
    assert thought_id != message_id  # the thinking and the answer are two messages
    assert got == [
        {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "Let me look."},
            "messageId": thought_id,
        },
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Hello "},
            "messageId": message_id,
        },
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "world"},
            "messageId": message_id,
        },
    ]
    assert pair.calls("session/update")[0]["sessionId"] == SID
    assert t.translate(TextDelta("")) == []


def edit_finished(status: str, result: str, old: str | None, new: str, **extra: object) -> ToolCallFinished:
    """How EDIT ended: its result and the diff of src/new.py."""
    return ToolCallFinished(
        call_id="call-1",
        status=status,
        result=result,
        diff=FileDiff("/work/project/src/new.py", old, new),
        **extra,
    )


async def test_edit_lifecycle_pending_running_completed_with_new_file_diff(pair):
    t = translator()
    finished = edit_finished("completed", "Created src/new.py (1 line)", None, "print('hi')\n")
    got = await deliver(pair, run(t, EDIT, ToolCallRunning("call-1"), finished))
    start, running, done = got
    assert start == {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "Write src/new.py",
        "kind": "edit",
        "status": "pending",
        "rawInput": {"path": "src/new.py", "content": "print('hi')\n"},
        "locations": [{"path": "/work/project/src/new.py", "line": 1}],
    }
    assert running == {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress"}
    assert done["status"] == "completed"
    assert done["rawOutput"] == {"output": "Created src/new.py (1 line)"}
    diff = done["content"][0]
    # A new file: oldText is present and null, which is how the editor knows.
    assert diff == {
        "type": "diff",
        "path": "/work/project/src/new.py",
        "oldText": None,
        "newText": "print('hi')\n",
    }
    assert len(done["content"]) == 1
    assert tuple(t.cards.open) == ()


async def test_failed_edit_keeps_diff_and_says_why(pair):
    t = translator()
    finished = edit_finished(
        "failed", "old_string not found in src/new.py", "a\n", "b\n", raw_output={"error": "not found"}
    )
    [_, done] = await deliver(pair, run(t, EDIT, finished))
    assert done["status"] == "failed"
    assert done["rawOutput"] == {"error": "not found"}
    assert done["content"][0]["oldText"] == "a\n"
    assert "old_string not found" in text_of(done)


async def test_read_result_is_shown_fenced_and_plain_tools_unfenced(pair):
    t = translator()
    read = ToolCallStarted("r1", "read_file", "Read a.md", "read", {"path": "a.md"})
    think = ToolCallStarted("t1", "note", "Note", "think", {})
    got = await deliver(
        pair,
        run(
            t,
            read,
            ToolCallFinished("r1", "completed", "# Title\n```py\nx\n```\n"),
            think,
            ToolCallFinished("t1", "completed", "noted **this**"),
        ),
    )
    read_text = text_of(got[1])
    # The file's own ``` cannot close the block around it.
    assert read_text.startswith("````\n# Title") and read_text.endswith("\n````")
    assert text_of(got[3]) == "noted **this**"


async def test_editor_terminal_is_embedded_once_and_stays_embedded(pair):
    t = translator()
    run_cmd = ToolCallStarted("c1", "run", "`make test`", "execute", {"command": "make test"})
    got = await deliver(
        pair,
        run(
            t,
            run_cmd,
            ToolCallRunning("c1", terminal_id="term-7"),
            ToolCallProgress("c1", terminal_id="term-7"),  # already embedded: nothing new
            ToolCallFinished("c1", "completed", "ok", exit_code=0, terminal_id="term-7"),
        ),
    )
    assert [u["sessionUpdate"] for u in got] == ["tool_call", "tool_call_update", "tool_call_update"]
    assert got[1]["status"] == "in_progress"
    assert got[1]["content"] == [{"type": "terminal", "terminalId": "term-7"}]
    assert got[2]["status"] == "completed"
    assert got[2]["content"] == [{"type": "terminal", "terminalId": "term-7"}]


async def test_terminal_created_by_the_tool_is_embedded_on_progress(pair):
    t = translator()
    run_cmd = ToolCallStarted("c1", "run", "`ls`", "execute", {"command": "ls"})
    got = await deliver(
        pair, run(t, run_cmd, ToolCallRunning("c1"), ToolCallProgress("c1", terminal_id="t-1"))
    )
    assert got[2]["content"] == [{"type": "terminal", "terminalId": "t-1"}]


async def test_zed_terminal_meta_sequence_for_local_commands(pair):
    t = translator(terminal_meta=True)
    run_cmd = ToolCallStarted("c9", "run", "`pytest`", "execute", {"command": "pytest"})
    got = await deliver(
        pair,
        run(
            t,
            run_cmd,
            ToolCallRunning("c9"),
            ToolCallProgress("c9", output="collected 3 items\n"),
            ToolCallProgress("c9", output="\x1b[31mFAILED\x1b[0m\n"),
            ToolCallFinished("c9", "failed", "1 failed", exit_code=1),
        ),
    )
    info, out1, out2, final = got[2:]
    assert info["_meta"] == {"terminal_info": {"terminal_id": "c9", "cwd": CWD}}
    assert info["content"] == [{"type": "terminal", "terminalId": "c9"}]
    assert out1["_meta"] == {"terminal_output": {"terminal_id": "c9", "data": "collected 3 items\n"}}
    # The terminal renders colours itself: data goes through untouched.
    assert out2["_meta"]["terminal_output"]["data"] == "\x1b[31mFAILED\x1b[0m\n"
    assert "content" not in out1 and "content" not in out2
    assert final["status"] == "failed"
    assert final["_meta"] == {"terminal_exit": {"terminal_id": "c9", "exit_code": 1, "signal": None}}
    assert final["content"] == [{"type": "terminal", "terminalId": "c9"}]
    assert final["rawOutput"] == {"output": "1 failed"}


async def test_without_terminal_meta_local_output_is_coalesced_text(pair):
    clock = FakeClock()
    t = translator(clock=clock)
    t.translate(ToolCallStarted("c1", "run", "`build`", "execute", {"command": "build"}))
    sent: list[dict] = []

    def progress(text: str, advance: float = 0.0) -> None:
        clock.now += advance
        sent.extend(t.translate(ToolCallProgress("c1", output=text)))

    progress("line 1\n")  # the first chunk shows at once
    assert len(sent) == 1
    progress("line 2\n", 0.01)
    progress("line 3\n", 0.01)
    assert len(sent) == 1  # held back: too soon, too small
    progress("x" * 5000 + "\n", 0.01)  # a big chunk goes out even when soon
    assert len(sent) == 2
    progress("line 5\n", 0.01)
    progress("line 6\n", 0.06)  # enough time passed
    assert len(sent) == 3
    progress("line 7\n", 0.001)
    final = t.translate(ToolCallFinished("c1", "completed", "done", exit_code=0))
    got = await deliver(pair, sent + final)
    # Each refresh shows everything so far; the final one carries it all.
    assert text_of(got[0]) == "```\nline 1\n```"
    assert "line 3\n" + "x" * 5000 in text_of(got[1])
    assert text_of(got[2]).endswith("line 6\n```")
    last = got[-1]
    assert last["status"] == "completed"
    assert text_of(last).startswith("```\nline 1\nline 2\nline 3\n")
    assert text_of(last).endswith("line 6\nline 7\n```")


def test_a_flood_of_small_chunks_becomes_few_updates():
    clock = FakeClock()  # time stands still: only size triggers a refresh
    t = translator(clock=clock)
    t.translate(ToolCallStarted("c1", "run", "`yes`", "execute", {"command": "yes"}))
    updates = [u for _ in range(10_000) for u in t.translate(ToolCallProgress("c1", output="y\n"))]
    assert 1 <= len(updates) <= 10


async def test_nonzero_exit_is_said_after_streamed_output(pair):
    t = translator()
    t.translate(ToolCallStarted("c1", "run", "`false`", "execute", {"command": "false"}))
    t.translate(ToolCallProgress("c1", output="\x1b[1mboom\x1b[0m\n"))
    [final] = await deliver(pair, t.translate(ToolCallFinished("c1", "failed", "exit 2", exit_code=2)))
    assert text_of(final) == "```\nboom\n```Exited with code 2."


async def test_close_open_tool_calls_fails_every_unfinished_call(pair):
    t = translator(terminal_meta=True)
    run(
        t,
        ToolCallStarted("a", "read_file", "Read x", "read", {"path": "x"}),
        ToolCallStarted("b", "run", "`sleep 9`", "execute", {"command": "sleep 9"}),
        ToolCallProgress("b", output="zzz"),
        EDIT,
        ToolCallFinished("a", "completed", "text"),
    )
    assert set(tuple(t.cards.open)) == {"b", "call-1"}
    closing = t.cards.close_open("Cancelled by the user.")
    got = await deliver(pair, closing)
    by_id = {u["toolCallId"]: u for u in got}
    assert set(by_id) == {"b", "call-1"}
    assert all(u["status"] == "failed" for u in got)
    assert "Cancelled by the user." in text_of(by_id["call-1"])
    assert by_id["b"]["_meta"]["terminal_exit"]["terminal_id"] == "b"
    assert tuple(t.cards.open) == ()
    # A result that arrives after the cancel does not flip the card back.
    assert t.translate(ToolCallFinished("b", "completed", "done")) == []


async def test_plan_is_sent_whole_every_time(pair):
    t = translator()
    first = PlanUpdated((PlanEntry("Read the code", "in_progress", "high"), PlanEntry("Fix the bug")))
    second = PlanUpdated(
        (PlanEntry("Read the code", "completed", "high"), PlanEntry("Fix the bug", "in_progress"))
    )
    got = await deliver(pair, run(t, first, second))
    assert got[1] == {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "Read the code", "priority": "high", "status": "completed"},
            {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
        ],
    }
    assert plan_update([]) == {"sessionUpdate": "plan", "entries": []}
    assert t.plan_update(first.entries)["sessionId"] == SID


async def test_usage_update_reports_context_and_cost(pair):
    t = translator()
    usage = Usage(input_tokens=1200, output_tokens=300, cached_tokens=1000)
    got = await deliver(
        pair,
        run(
            t,
            UsageUpdated(usage, usage, context_tokens=1500, context_window=200_000, cost_usd=0.0123),
            UsageUpdated(usage, usage, context_tokens=1500, context_window=200_000),
        ),
    )
    assert got[0]["used"] == 1500 and got[0]["size"] == 200_000
    assert got[0]["cost"] == {"amount": 0.0123, "currency": "USD"}
    assert got[0]["_meta"]["hermes"]["turn"]["cached_tokens"] == 1000
    assert "cost" not in got[1]  # unknown prices: no made-up zero


async def test_title_change_updates_session_info(pair):
    [info] = await deliver(pair, translator().translate(TitleChanged("Fix flaky login test")))
    assert info["sessionUpdate"] == "session_info_update"
    assert info["title"] == "Fix flaky login test"
    assert datetime.fromisoformat(info["updatedAt"].replace("Z", "+00:00")).tzinfo is not None


async def test_status_is_a_plain_sentence_in_the_thought_stream_only(pair):
    # A retry or a notice is worth a glance but is not part of the answer the user
    # copies: it goes to the thought stream as one plain sentence, a message of its own,
    # set off from thinking streamed before it, and nowhere else.
    t = translator()
    got = await deliver(
        pair,
        run(
            t,
            Status("retrying", "Rate limited; retrying in 2 s (attempt 2/5)"),
            ThoughtDelta("Let me think."),
            Status("notice", "Kept 40 messages and a *summary*"),
            Status("notice", "1) a numbered line"),
        ),
    )
    assert [u["sessionUpdate"] for u in got] == ["agent_thought_chunk"] * 4
    assert got[0]["content"]["text"] == "Rate limited; retrying in 2 s (attempt 2/5).\n\n"
    assert got[2]["content"]["text"] == "\n\nKept 40 messages and a \\*summary\\*.\n\n"
    assert got[3]["content"]["text"] == "1\\) a numbered line.\n\n"
    ids = [u["messageId"] for u in got]
    assert len(set(ids)) == 4  # each notice a message; the thinking its own
    # A client tells a status line from the model's thinking by its mark.
    assert [u.get("_meta", {}).get("hermes", {}).get("status") for u in got] == [
        "retrying",
        None,
        "notice",
        "notice",
    ]


async def test_a_compression_is_a_card_of_its_own(pair):
    t = translator()
    got = await deliver(
        pair,
        run(
            t,
            Status("compressing", "Compressing the conversation (90,000 of 128,000 tokens)."),
            Status(
                "compressed", "Compressed from 90,000 to 9,000 tokens.", {"before": 90_000, "messages": 40}
            ),
        ),
    )
    kinds = [u["sessionUpdate"] for u in got]
    assert "agent_thought_chunk" not in kinds
    assert kinds[0] == "tool_call" and got[0]["title"] == "Compacting the conversation"
    assert got[-1]["status"] == "completed" and got[-1]["title"] == "Compacted 40 messages"
    assert {u["toolCallId"] for u in got} == {got[0]["toolCallId"]}


def test_bookkeeping_events_send_nothing():
    t = translator()
    assert (
        run(
            t,
            StepFinished(1, "tool_calls"),
            MessageCommitted(Message(role="assistant", content="x")),
            TurnEnded(StopReason.END_TURN, Usage()),
        )
        == []
    )


async def test_replay_of_a_stored_conversation(pair):
    started = ToolCallStarted(
        "call-7",
        "write_file",
        "Write hello.py",
        "edit",
        {"path": "hello.py", "content": "print(1)\n"},
        (Location("/work/project/hello.py", None),),
    )
    finished = ToolCallFinished(
        "call-7", "completed", "Created hello.py", diff=FileDiff("/work/project/hello.py", None, "print(1)\n")
    )
    stored = [
        Message(role="system", content="You are hermes."),
        Message(
            role="user",
            content=[TextPart("What is in this screenshot?"), ImagePart("image/png", "iVBORw0KGgo=")],
        ),
        Message(
            role="assistant",
            content="I'll write a script.",
            reasoning="The user wants a file.",
            tool_calls=[ToolCall("call-7", "write_file", json.dumps(started.arguments))],
        ),
        Message(
            role="tool",
            content="Created hello.py",
            tool_call_id="call-7",
            name="write_file",
            display=tool_display(started, finished),
        ),
        Message(
            role="assistant", content="Done.", tool_calls=[ToolCall("call-8", "run", '{"command": "ls"}')]
        ),
    ]
    # What the store hands back went through JSON.
    stored = [Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in stored]
    got = await deliver(pair, replay_conversation(translator(), stored))
    kinds = [u["sessionUpdate"] for u in got]
    assert kinds == [
        "user_message_chunk",
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ]
    assert got[1]["content"] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    assert got[2]["content"]["text"] == "The user wants a file."
    assert got[4]["title"] == "Write hello.py" and got[4]["kind"] == "edit"
    assert got[4]["rawInput"] == {"path": "hello.py", "content": "print(1)\n"}
    assert got[4]["locations"] == [{"path": "/work/project/hello.py"}]
    assert got[5]["status"] == "completed"
    assert got[5]["content"] == [
        {"type": "diff", "path": "/work/project/hello.py", "oldText": None, "newText": "print(1)\n"}
    ]
    # A call whose result never made it (a crash mid-turn) is shown as failed, not pending forever.
    assert got[7]["title"] == "run" and got[7]["rawInput"] == {"command": "ls"}
    assert got[8]["toolCallId"] == "call-8" and got[8]["status"] == "failed"


async def test_replay_of_a_tool_message_without_display_still_reaches_a_final_status(pair):
    t = translator()
    updates = replay_message(
        t, Message(role="assistant", content="", tool_calls=[ToolCall("c", "grep", "{not json")])
    ) + replay_message(t, Message(role="tool", content="no matches", tool_call_id="c", is_error=True))
    got = await deliver(pair, updates)
    assert got[0]["title"] == "grep" and got[0]["rawInput"] == {"arguments": "{not json"}
    assert got[1]["status"] == "failed"
    assert "no matches" in text_of(got[1])
    assert tuple(t.cards.open) == ()


def test_display_for_is_json_and_records_commands():
    started = ToolCallStarted("c", "run", "`ls`", "execute", {"command": "ls"}, (Location("/a", 3),))
    finished = ToolCallFinished("c", "failed", "boom", exit_code=None, signal="SIGKILL")
    display = tool_display(started, finished)
    assert json.loads(json.dumps(display)) == display
    assert display["signal"] == "SIGKILL" and display["status"] == "failed"
    assert display["locations"] == [["/a", 3]]


def test_a_huge_output_flood_is_paced_by_the_clock_once_the_card_is_full():
    clock = FakeClock()
    t = translator(clock=clock)
    t.translate(ToolCallStarted("c1", "run", "`cat big.log`", "execute", {"command": "cat big.log"}))
    updates = []
    for _ in range(2000):  # 16 MB in 8 KiB chunks, all "at once"
        updates += t.translate(ToolCallProgress("c1", output="z" * 8191 + "\n"))
    # Bursts refresh the card only while it fills up; the rest waits for the clock.
    assert len(updates) <= 10
    clock.now += 0.06
    [params] = t.translate(ToolCallProgress("c1", output="tail\n"))
    shown = text_of(params["update"])
    assert shown.startswith("```\n[… earlier output cut]\n") and shown.endswith("tail\n```")
    assert len(shown) < 70_000


def test_a_huge_diff_is_not_stored_for_replay_but_its_path_is():
    started = ToolCallStarted("c", "write_file", "Write big.txt", "edit", {"path": "big.txt"})
    huge = FileDiff("/w/big.txt", None, "x" * 2_000_000)
    display = tool_display(started, ToolCallFinished("c", "completed", "wrote", diff=huge))
    assert "diff" not in display and display["diff_omitted"] == "/w/big.txt"
