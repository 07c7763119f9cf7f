"""What the store keeps of a tool call: the events its card was drawn from, so that a
replay (`session/load`) draws the card again with the code that drew it live
(`hermes_acp/bridge/tool_cards.py`) instead of a copy of it.

The records live in the `display` of the call's messages: the start on the assistant
message that made the call (`{"tool_calls": {id: start}}`, for a call a crash or a
cancel cut off), and the start, the output it streamed and the end on its result.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast, get_args

from hermes_core.events import FileDiff, Location, ToolCallFinished, ToolCallStarted, ToolKind

SHOWN_OUTPUT_CHARS = 64_000  # a card shows at most the tail this long of a command's output
MAX_STORED_DIFF_CHARS = 1_000_000  # larger diffs are not kept for session/load replays
_KINDS = frozenset(get_args(ToolKind))


class OutputTail:
    """The output a call streamed, as much of its end as a card shows, and one character
    more: a replay then knows that the start was cut, as the live card did."""

    __slots__ = ("_chars", "_chunks")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._chars = 0

    def append(self, text: str) -> None:
        self._chunks.append(text)
        self._chars += len(text)
        if self._chars > 2 * SHOWN_OUTPUT_CHARS:
            tail = self.text()
            self._chunks, self._chars = [tail], len(tail)

    def text(self) -> str:
        return "".join(self._chunks)[-(SHOWN_OUTPUT_CHARS + 1) :]


def started_record(event: ToolCallStarted) -> dict[str, Any]:
    return {
        "title": event.title,
        "kind": event.kind,
        "tool": event.tool,
        "raw_input": event.arguments,
        "locations": [[loc.path, loc.line] for loc in event.locations],
    }


def finished_record(event: ToolCallFinished, output: str = "") -> dict[str, Any]:
    """The end of a call (its result text is the message's content); `output`: what it
    streamed. An editor terminal's id is not kept: the terminal ends with this process."""
    record: dict[str, Any] = {"status": event.status, "raw_output": event.raw_output}
    diff = event.diff
    if diff is not None:
        if len(diff.old_text or "") + len(diff.new_text) <= MAX_STORED_DIFF_CHARS:
            record["diff"] = {"path": diff.path, "old_text": diff.old_text, "new_text": diff.new_text}
        else:
            record["diff_omitted"] = diff.path  # a replay shows the path, not megabytes of text
    if event.shown is not None:
        record["shown"] = event.shown
    if event.exit_code is not None or event.signal is not None:
        record["exit_code"] = event.exit_code
        record["signal"] = event.signal
    if output:
        record["output"] = output
    return record


def started_event(record: dict[str, Any], call_id: str, name: str, arguments: str) -> ToolCallStarted:
    """The start of a stored call; `name` and `arguments` (the model's) stand in for what
    an older record lacks."""
    raw_input = record.get("raw_input")
    if raw_input is None:
        raw_input = _parsed(arguments)
    locations = tuple(
        Location(item[0], item[1] if len(item) > 1 and isinstance(item[1], int) else None)
        for item in record.get("locations") or ()
        if isinstance(item, list | tuple) and item and isinstance(item[0], str)
    )
    title = record.get("title")
    kind = record.get("kind")
    return ToolCallStarted(
        call_id,
        str(record.get("tool") or name),
        title if isinstance(title, str) and title else name,
        cast(ToolKind, kind) if kind in _KINDS else "other",  # checked against the kinds
        raw_input,
        locations,
    )


def finished_event(record: dict[str, Any], call_id: str, result: str, is_error: bool) -> ToolCallFinished:
    stored_status = record.get("status")
    status: Literal["completed", "failed"]
    if stored_status in ("completed", "failed"):
        status = stored_status
    else:
        status = "failed" if is_error else "completed"
    stored = record.get("diff")
    diff = FileDiff(stored["path"], stored.get("old_text"), stored["new_text"]) if stored else None
    shown = record.get("shown")
    return ToolCallFinished(
        call_id,
        status,
        result,
        diff=diff,
        raw_output=record.get("raw_output"),
        exit_code=record.get("exit_code"),
        signal=record.get("signal"),
        shown=shown if isinstance(shown, str) else None,
    )


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return {"arguments": arguments}
