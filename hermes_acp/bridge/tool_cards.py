"""Tool calls as the editor's cards: one `tool_call` when a call starts, `tool_call_update`s
as it runs (status, streamed output, an embedded terminal) and a final one with its result.

The one place a card is drawn: the live thread feeds `ToolCards` the engine's events as
they come; `session/load` feeds it the same events read back from the store
(`hermes_core.loop.tool_record`, `session/replay.py`), so a replayed card is the live one.

`ToolCards` remembers which calls of a session are still open, so that a cancel or an
error can close every one of them (`close_open`), and drops what arrives for a call it
already closed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.remote_images import defuse
from hermes_core.events import (
    FileDiff,
    ToolCallFinished,
    ToolCallNote,
    ToolCallProgress,
    ToolCallRunning,
    ToolCallStarted,
)
from hermes_core.loop.tool_record import SHOWN_OUTPUT_CHARS
from hermes_core.shell.shown import shown as shown_text

if TYPE_CHECKING:
    from hermes_core.execution.jobs import JobEnded

COALESCE_SECONDS = 0.05  # at most ~20 card refreshes a second for locally streamed output
COALESCE_CHARS = 4096  # ...unless this much arrived since the last one
MAX_SHOWN_CHARS = SHOWN_OUTPUT_CHARS  # a tool card shows at most this much text (the tail of command output)

_FENCED_KINDS = frozenset({"read", "search", "execute"})
_KINDS = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"})
_BACKTICK_RUN = re.compile(r"`{3,}")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

Update = dict[str, Any]


@dataclass(slots=True)
class OpenCall:
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


@dataclass(slots=True)
class ToolCards:
    """The open tool calls of one session and the updates that draw their cards.

    `terminal_meta`: the client understands Zed's `_meta.terminal_*` convention, so
    output of commands we run ourselves streams into a terminal view instead of text.
    Every method returns `session/update` params (`{"sessionId", "update"}`).
    """

    session_id: str
    terminal_meta: bool
    cwd: str
    clock: Callable[[], float] = time.monotonic
    coalesce_seconds: float = COALESCE_SECONDS
    coalesce_chars: int = COALESCE_CHARS
    open: dict[str, OpenCall] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)  # closed by close_open; late events are dropped

    def wrap(self, update: Update) -> Update:
        return {"sessionId": self.session_id, "update": update}

    def opened(self, call_id: str, kind: str) -> None:
        self.closed.discard(call_id)
        self.open[call_id] = OpenCall(kind=kind)

    def open_outputs(self) -> dict[str, str]:
        """The open calls and what each streamed so far (its card's tail): what a replay
        needs to close them as `close_open` is about to."""
        return {
            call_id: "".join(call.chunks)[-(MAX_SHOWN_CHARS + 1) :] for call_id, call in self.open.items()
        }

    def close_open(self, message: str, only: Collection[str] | None = None) -> list[Update]:
        """A `failed` update for every tool call that started but never finished (cancel,
        error), so each one reaches a final status in the editor; `only`: of these calls."""
        updates = []
        closing = {k: v for k, v in self.open.items() if only is None or k in only}
        for call_id, call in closing.items():
            content: list[Update] = []
            update: Update = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "failed",
                "rawOutput": {"error": message},
            }
            if call.terminal_id:
                content.append(terminal_content(call.terminal_id))
            elif call.meta_terminal:
                content.append(terminal_content(call_id))
                update["_meta"] = {
                    "terminal_exit": {"terminal_id": call_id, "exit_code": None, "signal": None}
                }
            elif call.chunks:
                content.append(text_content(fence(call.shown_output())))
            content.append(text_content(message))
            update["content"] = content
            updates.append(self.wrap(update))
        self.closed.update(closing)
        for call_id in closing:
            del self.open[call_id]
        return updates

    def started(self, event: ToolCallStarted) -> list[Update]:
        self.opened(event.call_id, event.kind)
        update: Update = {
            "sessionUpdate": "tool_call",
            "toolCallId": event.call_id,
            # The model's words: nothing invisible in them, and no image (Zed renders a
            # title as Markdown).
            "title": defuse(shown_text(event.title)),
            "kind": event.kind,
            "status": "pending",
            "rawInput": event.arguments,
        }
        if event.locations:
            update["locations"] = [location(loc.path, loc.line) for loc in event.locations]
        return [self.wrap(update)]

    def running(self, event: ToolCallRunning) -> list[Update]:
        call = self._call(event.call_id)
        if call is None:
            return []
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": "in_progress",
        }
        if event.terminal_id:
            call.terminal_id = event.terminal_id
            update["content"] = [terminal_content(event.terminal_id)]
        return [self.wrap(update)]

    def progress(self, event: ToolCallProgress) -> list[Update]:
        call = self._call(event.call_id)
        if call is None:
            return []
        if event.terminal_id:
            # The editor shows the output itself; the card only needs the embed, once.
            if event.terminal_id == call.terminal_id:
                return []
            call.terminal_id = event.terminal_id
            return [self._in_progress(event.call_id, [terminal_content(event.terminal_id)])]
        if not event.output or call.terminal_id:
            return []
        call.append(event.output)  # with a `_meta` terminal too: a cancel records it (`open_outputs`)
        if self.terminal_meta:
            return self._meta_output(event.call_id, call, event.output)
        due = self.clock() - call.sent_at >= self.coalesce_seconds
        # A burst shows at once while the card fills; once it holds MAX_SHOWN_CHARS, more
        # output only slides the window, and the clock alone paces the refreshes.
        burst = call.unsent > self.coalesce_chars and not call.cut and call.chars <= MAX_SHOWN_CHARS
        if not (due or burst):
            return []
        return [self._output_update(event.call_id, call)]

    def note(self, event: ToolCallNote) -> list[Update]:
        if self._call(event.call_id) is None:
            return []
        return [self._in_progress(event.call_id, [text_content(event.text)])]

    def finished(self, event: ToolCallFinished) -> list[Update]:
        if event.call_id in self.closed:
            return []
        call = self.open.pop(event.call_id, None) or OpenCall()
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": event.status,
            "rawOutput": event.raw_output if event.raw_output is not None else {"output": event.result},
        }
        content: list[Update] = []
        terminal_id = event.terminal_id or call.terminal_id
        if event.shown is not None:  # the result is written for the model, not the user
            content = [text_content(event.shown)] if event.shown else []
        elif terminal_id:
            if event.diff is not None:
                content.append(diff_content(event.diff.path, event.diff.old_text, event.diff.new_text))
            content.append(terminal_content(terminal_id))
            if event.status == "failed" and event.result:
                content.append(text_content(fence(shown(event.result))))
        elif call.meta_terminal:
            content.append(terminal_content(event.call_id))
            update["_meta"] = {
                "terminal_exit": {
                    "terminal_id": event.call_id,
                    "exit_code": event.exit_code,
                    "signal": event.signal,
                }
            }
        elif call.chunks:
            content.append(text_content(fence(call.shown_output())))
            note = _exit_note(event.exit_code, event.signal)
            if note:
                content.append(text_content(note))
            refused = (event.raw_output or {}).get("sandbox_refused")
            if refused:  # the streamed output alone would not say the sandbox was to blame
                content.append(text_content(f"The sandbox likely refused this command: {refused}"))
        else:
            content = result_content(
                call.kind, event.status, event.result, event.diff, event.exit_code, event.signal
            )
        if content:
            update["content"] = content
        return [self.wrap(update)]

    def job_ended(self, ended: JobEnded) -> Update:
        """A background command's end, on the card of the call that started it (closed
        long since: the update reopens nothing, it adds the end)."""
        text = f"{ended.handle} ended: {ended.status}."
        if ended.tail.strip():
            text += f" Last output:\n{ended.tail.strip()}"
        return self.wrap(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": ended.call_id,
                "status": "completed" if ended.exit_code == 0 and not ended.signal else "failed",
                "content": [text_content(text)],
                "rawOutput": {"handle": ended.handle, "exit_code": ended.exit_code, "signal": ended.signal},
            }
        )

    def _in_progress(self, call_id: str, content: list[Update]) -> Update:
        return self.wrap(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
                "content": content,
            }
        )

    def _meta_output(self, call_id: str, call: OpenCall, data: str) -> list[Update]:
        updates = []
        if not call.meta_terminal:
            # Zed creates its terminal view from terminal_info; output may only follow it.
            call.meta_terminal = True
            opening = self._in_progress(call_id, [terminal_content(call_id)])
            opening["update"]["_meta"] = {"terminal_info": {"terminal_id": call_id, "cwd": self.cwd}}
            updates.append(opening)
        updates.append(
            self.wrap(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "_meta": {"terminal_output": {"terminal_id": call_id, "data": data}},
                }
            )
        )
        return updates

    def _output_update(self, call_id: str, call: OpenCall) -> Update:
        call.sent_at = self.clock()
        call.unsent = 0
        return self.wrap(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [text_content(fence(call.shown_output()))],
            }
        )

    def _call(self, call_id: str) -> OpenCall | None:
        if call_id in self.closed:
            return None
        call = self.open.get(call_id)
        if call is None:
            call = self.open[call_id] = OpenCall()
        return call


# -- card content ---------------------------------------------------------------------------


def result_content(
    kind: str,
    status: str,
    result: str,
    diff: FileDiff | None,
    exit_code: int | None,
    signal: str | None,
) -> list[Update]:
    content: list[Update] = []
    if diff is not None:
        content.append(diff_content(diff.path, diff.old_text, diff.new_text))
        # The diff says what happened; the text only matters when it went wrong.
        if status == "failed" and result:
            content.append(text_content(fence(shown(result))))
        return content
    if result:
        is_command = exit_code is not None or signal is not None
        if kind in _FENCED_KINDS or status == "failed" or is_command:
            content.append(text_content(fence(_ANSI.sub("", shown(result)))))
        else:
            content.append(text_content(shown(result)))
    return content


def known_kind(kind: Any) -> str:
    return kind if kind in _KINDS else "other"


def location(path: str, line: int | None) -> Update:
    if line is None or line < 0:
        return {"path": path}
    return {"path": path, "line": line}


def diff_content(path: str, old_text: str | None, new_text: str) -> Update:
    # oldText stays present as null for a new file: that is how the editor knows it is new.
    return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}


def terminal_content(terminal_id: str) -> Update:
    return {"type": "terminal", "terminalId": terminal_id}


def text_content(text: str) -> Update:
    # Editors render a card's text as Markdown: what a command printed or a tool returned
    # (`![x](https://…?d=<token>)`) must not load an image there either.
    return {"type": "content", "content": {"type": "text", "text": defuse(text)}}


def shown(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + f"\n[… {len(text) - MAX_SHOWN_CHARS} more characters not shown]"


def fence(text: str) -> str:
    """Text in a fenced code block whose fence no run of backticks inside can close."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    marks = "`" * max(3, longest + 1)
    newline = "" if text.endswith("\n") else "\n"
    return f"{marks}\n{text}{newline}{marks}"


def _exit_note(exit_code: int | None, signal: str | None) -> str | None:
    if signal:
        return f"Killed by signal {signal}."
    if exit_code:
        return f"Exited with code {exit_code}."
    return None
