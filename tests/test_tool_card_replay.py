"""A command's card drawn live from the engine's events and drawn again from what the store
kept of them (`hermes_core.loop.tool_record`) is the same card: the cases a whole-server test
cannot make cheaply (output over the card's limit, ANSI colours, a failure with output)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_acp.bridge.events import EventTranslator
from hermes_acp.session.replay import replay_conversation
from hermes_core.events import (
    ToolCallFinished,
    ToolCallProgress,
    ToolCallRunning,
    ToolCallStarted,
)
from hermes_core.loop.tool_record import SHOWN_OUTPUT_CHARS, OutputTail, started_record
from hermes_core.loop.tool_runner import tool_display
from hermes_core.messages import Message, ToolCall

STARTED = ToolCallStarted("c1", "terminal", "Run: make", "execute", {"command": "make"})


def card(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """The card an editor ends with: each update's fields over the last; `_meta` terminal
    output appended."""
    drawn: dict[str, Any] = {}
    for params in updates:
        update = params["update"]
        for field in ("title", "kind", "status", "rawInput", "rawOutput", "locations", "content"):
            if field in update:
                drawn[field] = update[field]
        meta = update.get("_meta") or {}
        if "terminal_output" in meta:
            drawn["output"] = drawn.get("output", "") + meta["terminal_output"]["data"]
        for key in ("terminal_info", "terminal_exit"):
            if key in meta:
                drawn[key] = meta[key]
    return drawn


def live_and_replayed(
    chunks: list[str], finished: ToolCallFinished, terminal_meta: bool
) -> tuple[dict, dict]:
    live = EventTranslator("s", terminal_meta=terminal_meta, cwd="/w")
    updates = live.translate(STARTED) + live.translate(ToolCallRunning("c1"))
    tail = OutputTail()
    for text in chunks:
        updates += live.translate(ToolCallProgress("c1", output=text))
        tail.append(text)
    updates += live.translate(finished)
    stored = [
        Message(
            role="assistant",
            tool_calls=[ToolCall("c1", "terminal", '{"command": "make"}')],
            display={"tool_calls": {"c1": started_record(STARTED)}},
        ),
        Message(
            role="tool",
            content=finished.result,
            tool_call_id="c1",
            name="terminal",
            is_error=finished.status == "failed",
            display=tool_display(STARTED, finished, tail.text()),
        ),
    ]
    stored = [
        Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in stored
    ]  # as the store hands it back
    replayed = replay_conversation(EventTranslator("s", terminal_meta=terminal_meta, cwd="/w"), stored)
    return card(updates), card(replayed)


def test_output_longer_than_the_card_shows_the_same_tail_and_cut_note() -> None:
    chunks = ["\x1b[32mok\x1b[0m\n"] + ["x" * 8191 + "\n"] * 20 + ["last line\n"]
    finished = ToolCallFinished(
        "c1", "completed", "Exit code: 0\n…", raw_output={"exit_code": 0}, exit_code=0
    )
    live, replayed = live_and_replayed(chunks, finished, terminal_meta=False)
    shown = live["content"][0]["content"]["text"]
    assert "[… earlier output cut]" in shown and shown.endswith("last line\n```")
    assert len(shown) < SHOWN_OUTPUT_CHARS + 100
    assert replayed == live


@pytest.mark.parametrize("terminal_meta", [False, True], ids=["text", "meta terminal"])
def test_a_failed_command_replays_its_output_and_exit(terminal_meta: bool) -> None:
    chunks = ["compiling\n", "\x1b[31merror:\x1b[0m missing ;\n"]
    finished = ToolCallFinished(
        "c1",
        "failed",
        "Exit code: 2\ncompiling\nerror: missing ;",
        raw_output={"exit_code": 2, "output": "compiling\nerror: missing ;\n"},
        exit_code=2,
    )
    live, replayed = live_and_replayed(chunks, finished, terminal_meta)
    assert live["status"] == "failed"
    if terminal_meta:
        assert live["terminal_exit"]["exit_code"] == 2 and "error:" in live["output"]
    else:
        assert [c["content"]["text"] for c in live["content"]][-1] == "Exited with code 2."
    assert replayed == live
