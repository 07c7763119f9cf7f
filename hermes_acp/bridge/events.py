"""Core events -> `session/update` params; stored messages -> the same, for `session/load`.

Every method returns a list of `session/update` params dicts (`{"sessionId", "update"}`),
already in wire shape (camelCase, no None fields), so the caller only sends them.
Text and thought deltas are the hot path: one small dict each, nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.events import (
    AnswerRestarted,
    Event,
    FileDiff,
    PlanEntry,
    PlanUpdated,
    Status,
    StepFinished,
    TextDelta,
    ThoughtDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallNote,
    ToolCallProgress,
    ToolCallRunning,
    ToolCallStarted,
    UsageUpdated,
)
from core.messages import ContentPart, ImagePart, Message

COALESCE_SECONDS = 0.05  # at most ~20 card refreshes a second for locally streamed output
COALESCE_CHARS = 4096  # ...unless this much arrived since the last one
MAX_SHOWN_CHARS = 64_000  # a tool card shows at most this much text (the tail of command output)
INTERRUPTED = "Interrupted: this tool call did not complete."
ANSWER_RESTARTED = (
    "The connection dropped mid-answer and the model answered again: the partial answer "
    "above was discarded; the answer below replaces it."
)

_FENCED_KINDS = frozenset({"read", "search", "execute"})
_BACKTICK_RUN = re.compile(r"`{3,}")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>])")
_TOOL_STATUSES = frozenset({"completed", "failed"})


@dataclass(slots=True)
class _OpenCall:
    kind: str = "other"
    terminal_id: str | None = None  # an editor terminal embedded in the card
    meta_terminal: bool = False  # Zed's `_meta` terminal opened for local output
    chunks: list[str] = field(default_factory=list)  # local output, when shown as text
    chars: int = 0
    cut: bool = False  # older output was dropped to keep the card small
    unsent: int = 0  # characters that arrived since the card was last refreshed
    sent_at: float = float("-inf")

    def append(self, text: str) -> None:
        self.chunks.append(text)
        self.chars += len(text)
        self.unsent += len(text)
        if self.chars > 2 * MAX_SHOWN_CHARS:
            tail = "".join(self.chunks)[-MAX_SHOWN_CHARS:]
            self.chunks = [tail]
            self.chars = len(tail)
            self.cut = True

    def shown_output(self) -> str:
        text = _ANSI.sub("", "".join(self.chunks)[-MAX_SHOWN_CHARS:])
        return f"[… earlier output cut]\n{text}" if self.cut or self.chars > MAX_SHOWN_CHARS else text


class EventTranslator:
    """Translates one session's events; remembers which tool calls are still open.

    `terminal_meta`: the client understands Zed's `_meta.terminal_*` convention, so
    output of commands we run ourselves streams into a terminal view instead of text.
    """

    def __init__(
        self,
        session_id: str,
        *,
        terminal_meta: bool,
        cwd: str,
        clock: Callable[[], float] = time.monotonic,
        coalesce_seconds: float = COALESCE_SECONDS,
        coalesce_chars: int = COALESCE_CHARS,
    ) -> None:
        self.session_id = session_id
        self._terminal_meta = terminal_meta
        self._cwd = cwd
        self._clock = clock
        self._coalesce_seconds = coalesce_seconds
        self._coalesce_chars = coalesce_chars
        self._open: dict[str, _OpenCall] = {}
        self._closed: set[str] = set()  # closed by close_open_tool_calls; late events are dropped
        self._replay_displays: dict[str, dict[str, Any]] = {}
        # The live answer's ACP messageId: one per model call, a new one when a retry
        # discards what was shown, so a client knows where one message ends.
        self._message_id: str | None = None
        self._thought_id: str | None = None  # the same for the model call's thinking
        self._handlers: dict[type, Callable[[Any], list[dict[str, Any]]]] = {
            TextDelta: self._text,
            ThoughtDelta: self._thought,
            ToolCallStarted: self._started,
            ToolCallRunning: self._running,
            ToolCallProgress: self._progress,
            ToolCallNote: self._note,
            ToolCallFinished: self._finished,
            PlanUpdated: self._plan,
            UsageUpdated: self._usage,
            TitleChanged: self._title,
            Status: self._status,
            AnswerRestarted: self._restarted,
            StepFinished: self._step_finished,
        }

    # -- live events -----------------------------------------------------------------

    def translate(self, event: Event) -> list[dict[str, Any]]:
        """The `session/update` params for one event (often one, sometimes none)."""
        handler = self._handlers.get(type(event))
        return handler(event) if handler is not None else []

    def start_turn(self) -> None:
        """A new turn: its text is a new message, whatever the last turn left open."""
        self._message_id = self._thought_id = None

    @property
    def open_tool_calls(self) -> tuple[str, ...]:
        return tuple(self._open)

    def close_open_tool_calls(self, message: str) -> list[dict[str, Any]]:
        """A `failed` update for every tool call that started but never finished (cancel,
        error), so each one reaches a final status in the editor."""
        updates = []
        for call_id, call in self._open.items():
            content: list[dict[str, Any]] = []
            update: dict[str, Any] = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "failed",
                "rawOutput": {"error": message},
            }
            if call.terminal_id:
                content.append(_terminal(call.terminal_id))
            elif call.meta_terminal:
                content.append(_terminal(call_id))
                update["_meta"] = {
                    "terminal_exit": {"terminal_id": call_id, "exit_code": None, "signal": None}
                }
            elif call.chunks:
                content.append(_text_content(_fence(call.shown_output())))
            content.append(_text_content(message))
            update["content"] = content
            updates.append(self._wrap(update))
        self._closed.update(self._open)
        self._open.clear()
        return updates

    def flush_output(self) -> list[dict[str, Any]]:
        """Refresh cards whose local output was held back by coalescing. Optional: a caller
        may run it on a timer so a command that prints and then goes quiet shows its
        last lines before it finishes (the final update carries everything anyway)."""
        return [self._output_update(call_id, call) for call_id, call in self._open.items() if call.unsent]

    def plan_update(self, entries: Iterable[PlanEntry]) -> dict[str, Any]:
        """The `session/update` params for a whole plan (e.g. the stored plan on load)."""
        return self._wrap(plan_update(entries))

    def _wrap(self, update: dict[str, Any]) -> dict[str, Any]:
        return {"sessionId": self.session_id, "update": update}

    def _text(self, event: TextDelta) -> list[dict[str, Any]]:
        if not event.text:
            return []
        if self._message_id is None:
            self._message_id = uuid.uuid4().hex
        return [
            {
                "sessionId": self.session_id,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": event.text},
                    "messageId": self._message_id,
                },
            }
        ]

    def _restarted(self, event: AnswerRestarted) -> list[dict[str, Any]]:
        # Two signals, for two kinds of client: a new messageId for those that follow it,
        # and a line in the thought stream that every client shows between the dropped
        # text and the new answer (Zed starts a new text block after a thought).
        self._message_id = None
        if not event.discarded:
            return []
        return self._status(Status("notice", ANSWER_RESTARTED))

    def _step_finished(self, event: StepFinished) -> list[dict[str, Any]]:
        self._message_id = self._thought_id = None  # the next model call's text is a new message
        return []

    def _thought(self, event: ThoughtDelta) -> list[dict[str, Any]]:
        if not event.text:
            return []
        if self._thought_id is None:
            self._thought_id = uuid.uuid4().hex
        return [
            {
                "sessionId": self.session_id,
                "update": {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": event.text},
                    "messageId": self._thought_id,
                },
            }
        ]

    def _started(self, event: ToolCallStarted) -> list[dict[str, Any]]:
        self._closed.discard(event.call_id)
        self._open[event.call_id] = _OpenCall(kind=event.kind)
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": event.call_id,
            "title": event.title,
            "kind": event.kind,
            "status": "pending",
            "rawInput": event.arguments,
        }
        if event.locations:
            update["locations"] = [_location(loc.path, loc.line) for loc in event.locations]
        return [self._wrap(update)]

    def _running(self, event: ToolCallRunning) -> list[dict[str, Any]]:
        call = self._call(event.call_id)
        if call is None:
            return []
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": "in_progress",
        }
        if event.terminal_id:
            call.terminal_id = event.terminal_id
            update["content"] = [_terminal(event.terminal_id)]
        return [self._wrap(update)]

    def _progress(self, event: ToolCallProgress) -> list[dict[str, Any]]:
        call = self._call(event.call_id)
        if call is None:
            return []
        if event.terminal_id:
            # The editor shows the output itself; the card only needs the embed, once.
            if event.terminal_id == call.terminal_id:
                return []
            call.terminal_id = event.terminal_id
            return [
                self._wrap(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": event.call_id,
                        "status": "in_progress",
                        "content": [_terminal(event.terminal_id)],
                    }
                )
            ]
        if not event.output or call.terminal_id:
            return []
        if self._terminal_meta:
            return self._meta_output(event.call_id, call, event.output)
        call.append(event.output)
        due = self._clock() - call.sent_at >= self._coalesce_seconds
        # A burst shows at once while the card fills; once it holds MAX_SHOWN_CHARS, more
        # output only slides the window, and the clock alone paces the refreshes.
        burst = call.unsent > self._coalesce_chars and not call.cut and call.chars <= MAX_SHOWN_CHARS
        if not (due or burst):
            return []
        return [self._output_update(event.call_id, call)]

    def _note(self, event: ToolCallNote) -> list[dict[str, Any]]:
        if self._call(event.call_id) is None:
            return []
        update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": "in_progress",
            "content": [_text_content(event.text)],
        }
        return [self._wrap(update)]

    def _meta_output(self, call_id: str, call: _OpenCall, data: str) -> list[dict[str, Any]]:
        updates = []
        if not call.meta_terminal:
            # Zed creates its terminal view from terminal_info; output may only follow it.
            call.meta_terminal = True
            updates.append(
                self._wrap(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "in_progress",
                        "content": [_terminal(call_id)],
                        "_meta": {"terminal_info": {"terminal_id": call_id, "cwd": self._cwd}},
                    }
                )
            )
        updates.append(
            self._wrap(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "_meta": {"terminal_output": {"terminal_id": call_id, "data": data}},
                }
            )
        )
        return updates

    def _output_update(self, call_id: str, call: _OpenCall) -> dict[str, Any]:
        call.sent_at = self._clock()
        call.unsent = 0
        return self._wrap(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [_text_content(_fence(call.shown_output()))],
            }
        )

    def _finished(self, event: ToolCallFinished) -> list[dict[str, Any]]:
        if event.call_id in self._closed:
            return []
        call = self._open.pop(event.call_id, None) or _OpenCall()
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": event.status,
            "rawOutput": event.raw_output if event.raw_output is not None else {"output": event.result},
        }
        content: list[dict[str, Any]] = []
        terminal_id = event.terminal_id or call.terminal_id
        if event.shown is not None:  # the result is written for the model, not the user
            content = [_text_content(event.shown)] if event.shown else []
        elif terminal_id:
            if event.diff is not None:
                content.append(_diff(event.diff.path, event.diff.old_text, event.diff.new_text))
            content.append(_terminal(terminal_id))
            if event.status == "failed" and event.result:
                content.append(_text_content(_fence(_shown(event.result))))
        elif call.meta_terminal:
            content.append(_terminal(event.call_id))
            update["_meta"] = {
                "terminal_exit": {
                    "terminal_id": event.call_id,
                    "exit_code": event.exit_code,
                    "signal": event.signal,
                }
            }
        elif call.chunks:
            content.append(_text_content(_fence(call.shown_output())))
            note = _exit_note(event.exit_code, event.signal)
            if note:
                content.append(_text_content(note))
            refused = (event.raw_output or {}).get("sandbox_refused")
            if refused:  # the streamed output alone would not say the sandbox was to blame
                content.append(_text_content(f"The sandbox likely refused this command: {refused}"))
        else:
            content = _result_content(
                call.kind, event.status, event.result, event.diff, event.exit_code, event.signal
            )
        if content:
            update["content"] = content
        return [self._wrap(update)]

    def _plan(self, event: PlanUpdated) -> list[dict[str, Any]]:
        return [self._wrap(plan_update(event.entries))]

    def _usage(self, event: UsageUpdated) -> list[dict[str, Any]]:
        update: dict[str, Any] = {
            "sessionUpdate": "usage_update",
            "used": max(0, int(event.context_tokens)),
            "size": max(0, int(event.context_window)),
            "_meta": {
                "hermes": {
                    "turn": dataclasses.asdict(event.turn),
                    "total": dataclasses.asdict(event.total),
                }
            },
        }
        if event.cost_usd is not None:
            update["cost"] = {"amount": float(event.cost_usd), "currency": "USD"}
        return [self._wrap(update)]

    def _title(self, event: TitleChanged) -> list[dict[str, Any]]:
        return [
            self._wrap(
                {
                    "sessionUpdate": "session_info_update",
                    "title": event.title,
                    "updatedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                }
            )
        ]

    def _status(self, event: Status) -> list[dict[str, Any]]:
        # A retry or a compression is worth a glance, not part of the answer: an italic
        # line in the thought stream keeps it out of the text the user copies.
        line = " ".join(event.message.split())
        if not line:
            return []
        escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", line)
        text = f"\n\n_{escaped}_\n\n"
        return [self._wrap(_chunk("agent_thought_chunk", {"type": "text", "text": text}))]

    def _call(self, call_id: str) -> _OpenCall | None:
        if call_id in self._closed:
            return None
        call = self._open.get(call_id)
        if call is None:
            call = self._open[call_id] = _OpenCall()
        return call

    # -- replay (session/load) -------------------------------------------------------

    def replay_conversation(self, messages: Iterable[Message]) -> list[dict[str, Any]]:
        """The whole history as updates: each tool call's card is built from the result's
        stored `display`, and calls that never got a result end `failed`."""
        messages = list(messages)
        self._replay_displays = {
            m.tool_call_id: m.display for m in messages if m.role == "tool" and m.tool_call_id and m.display
        }
        try:
            updates = [update for message in messages for update in self.replay_message(message)]
        finally:
            self._replay_displays = {}
        return updates + self.close_open_tool_calls(INTERRUPTED)

    def replay_message(self, message: Message) -> list[dict[str, Any]]:
        """One stored message as updates (user chunks; thought, text and tool calls;
        a tool result's final card)."""
        # Each stored message is one ACP message: its chunks share a messageId.
        message_id = uuid.uuid4().hex
        if message.role == "user":
            blocks = _typed_blocks(message)
            return [self._wrap(_chunk("user_message_chunk", block, message_id)) for block in blocks]
        if message.role == "assistant":
            updates = []
            if message.reasoning:
                thought = {"type": "text", "text": message.reasoning}
                updates.append(self._wrap(_chunk("agent_thought_chunk", thought, uuid.uuid4().hex)))
            for block in _blocks(message.content):
                updates.append(self._wrap(_chunk("agent_message_chunk", block, message_id)))
            cards = (message.display or {}).get("tool_calls") or {}
            for call in message.tool_calls:
                # The result's display is complete; the assistant's own card stands in
                # for a call that a crash or cancel cut off before its result.
                display = self._replay_displays.get(call.id) or cards.get(call.id) or {}
                self._closed.discard(call.id)
                self._open[call.id] = _OpenCall(kind=_kind(display))
                update = {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call.id,
                    "title": display.get("title") or call.name,
                    "kind": _kind(display),
                    "status": "pending",
                    "rawInput": display.get("raw_input", _arguments(call.arguments)),
                }
                locations = _display_locations(display)
                if locations:
                    update["locations"] = locations
                updates.append(self._wrap(update))
            return updates
        if message.role == "tool" and message.tool_call_id:
            self._open.pop(message.tool_call_id, None)
            return [self._wrap(_replayed_result(message))]
        return []


# -- building blocks -----------------------------------------------------------------


def plan_update(entries: Iterable[PlanEntry]) -> dict[str, Any]:
    """The `plan` update (the update object, without sessionId) for the full entry list."""
    return {
        "sessionUpdate": "plan",
        "entries": [
            {"content": entry.content, "priority": entry.priority, "status": entry.status}
            for entry in entries
        ],
    }


def _replayed_result(message: Message) -> dict[str, Any]:
    display = message.display or {}
    status = display.get("status")
    if status not in _TOOL_STATUSES:
        status = "failed" if message.is_error else "completed"
    result = message.text
    raw_output = display.get("raw_output")
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": message.tool_call_id,
        "status": status,
        "rawOutput": raw_output if raw_output is not None else {"output": result},
    }
    if display.get("title"):
        update["title"] = display["title"]
        update["kind"] = _kind(display)
    if "raw_input" in display:
        update["rawInput"] = display["raw_input"]
    locations = _display_locations(display)
    if locations:
        update["locations"] = locations
    stored = display.get("diff")
    diff = FileDiff(stored["path"], stored.get("old_text"), stored["new_text"]) if stored else None
    shown = display.get("shown")
    if isinstance(shown, str):
        content = [_text_content(shown)] if shown else []
    else:
        content = _result_content(
            _kind(display), status, result, diff, display.get("exit_code"), display.get("signal")
        )
    if content:
        update["content"] = content
    return update


def _result_content(
    kind: str,
    status: str,
    result: str,
    diff: FileDiff | None,
    exit_code: int | None,
    signal: str | None,
) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if diff is not None:
        content.append(_diff(diff.path, diff.old_text, diff.new_text))
        # The diff says what happened; the text only matters when it went wrong.
        if status == "failed" and result:
            content.append(_text_content(_fence(_shown(result))))
        return content
    if result:
        is_command = exit_code is not None or signal is not None
        if kind in _FENCED_KINDS or status == "failed" or is_command:
            content.append(_text_content(_fence(_ANSI.sub("", _shown(result)))))
        else:
            content.append(_text_content(_shown(result)))
    return content


def _chunk(kind: str, block: dict[str, Any], message_id: str | None = None) -> dict[str, Any]:
    chunk = {"sessionUpdate": kind, "content": block}
    if message_id is not None:
        chunk["messageId"] = message_id
    return chunk


def _typed_blocks(message: Message) -> list[dict[str, Any]]:
    """A user message's blocks as the user sent them: the turn context the loop added
    (changed files, recalled memory) is for the model, not the editor's transcript."""
    from core.turn_context import without_turn_preamble

    blocks = []
    for block in _blocks(message.content):
        if block["type"] == "text":
            block = {"type": "text", "text": without_turn_preamble(block["text"])}
            if not block["text"]:
                continue
        blocks.append(block)
    return blocks


def _blocks(content: str | list[ContentPart]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content:
        if isinstance(part, ImagePart):
            blocks.append({"type": "image", "data": part.data, "mimeType": part.mime_type})
        elif part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks


def _location(path: str, line: int | None) -> dict[str, Any]:
    if line is None or line < 0:
        return {"path": path}
    return {"path": path, "line": line}


def _display_locations(display: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for item in display.get("locations") or ():
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            out.append(_location(item["path"], item.get("line")))
        elif isinstance(item, list | tuple) and item and isinstance(item[0], str):
            out.append(_location(item[0], item[1] if len(item) > 1 else None))
    return out


_KINDS = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"})


def _kind(display: dict[str, Any]) -> str:
    kind = display.get("kind")
    return kind if kind in _KINDS else "other"


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {"arguments": raw}


def _diff(path: str, old_text: str | None, new_text: str) -> dict[str, Any]:
    # oldText stays present as null for a new file: that is how the editor knows it is new.
    return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}


def _terminal(terminal_id: str) -> dict[str, Any]:
    return {"type": "terminal", "terminalId": terminal_id}


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def _shown(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + f"\n[… {len(text) - MAX_SHOWN_CHARS} more characters not shown]"


def _fence(text: str) -> str:
    """Text in a fenced code block whose fence no run of backticks inside can close."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    newline = "" if text.endswith("\n") else "\n"
    return f"{fence}\n{text}{newline}{fence}"


def _exit_note(exit_code: int | None, signal: str | None) -> str | None:
    if signal:
        return f"Killed by signal {signal}."
    if exit_code:
        return f"Exited with code {exit_code}."
    return None
