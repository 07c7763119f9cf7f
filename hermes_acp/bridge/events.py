"""Core events -> `session/update` params: what a turn streams to the editor.

Every method returns a list of `session/update` params dicts (`{"sessionId", "update"}`),
already in wire shape (camelCase, no None fields), so the caller only sends them.
Text and thought deltas are the hot path: one small dict each, nothing else. Tool calls
are drawn by `tool_cards`; a stored conversation is shown again by `session.replay`.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from hermes_acp.bridge.remote_images import ImageDefuser, defuse
from hermes_acp.bridge.tool_cards import COALESCE_CHARS, COALESCE_SECONDS, ToolCards
from hermes_core.events import (
    AnswerRestarted,
    Event,
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
from hermes_core.models import Usage
from hermes_core.shell.shown import shown

ANSWER_RESTARTED = (
    "The connection dropped mid-answer and the model answered again: the partial answer "
    "above was discarded; the answer below replaces it."
)

ANSWER = "agent_message_chunk"
THOUGHT = "agent_thought_chunk"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>])")

Update = dict[str, Any]


class EventTranslator:
    """Translates one session's events; its `cards` remember which tool calls are open."""

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
        self.cards = ToolCards(session_id, terminal_meta, cwd, clock, coalesce_seconds, coalesce_chars)
        # The ACP messageId of the live answer and of its thinking, by chunk kind: one per
        # model call, a new one when a retry discards what was shown, so a client knows
        # where one message ends.
        self._message_ids: dict[str, str] = {}
        self._thinking = False  # thought text streamed since the last answer text or notice
        self._compaction: str | None = None  # the card of a compression under way
        # The model's Markdown, by chunk kind, so that no image in it loads when rendered.
        self._defusers = {ANSWER: ImageDefuser(), THOUGHT: ImageDefuser()}
        self._handlers: dict[type, Callable[[Any], list[Update]]] = {
            TextDelta: self._text,
            ThoughtDelta: self._thought,
            ToolCallStarted: self.cards.started,
            ToolCallRunning: self.cards.running,
            ToolCallProgress: self.cards.progress,
            ToolCallNote: self.cards.note,
            ToolCallFinished: self.cards.finished,
            PlanUpdated: self._plan,
            UsageUpdated: self._usage,
            TitleChanged: self._title,
            Status: self._status,
            AnswerRestarted: self._restarted,
            StepFinished: self._step_finished,
        }

    def translate(self, event: Event) -> list[Update]:
        """The `session/update` params for one event (often one, sometimes none)."""
        kind = type(event)
        # Anything else between the model's deltas ends their run: what a defuser held
        # back goes first, so the editor gets everything in order.
        held = self._held(THOUGHT) if kind is not ThoughtDelta else []
        if kind is not TextDelta:
            held += self._held(ANSWER)
        handler = self._handlers.get(kind)
        return held + (handler(event) if handler is not None else [])

    def flush(self) -> list[Update]:
        """What the model's text still holds back, at the end of a turn (or its cancel)."""
        return self._held(THOUGHT) + self._held(ANSWER)

    def _held(self, kind: str) -> list[Update]:
        held = self._defusers[kind].flush()
        return self._streamed(kind, held, defused=True) if held else []

    def start_turn(self) -> None:
        """A new turn: its text is a new message, whatever the last turn left open."""
        self._message_ids.clear()
        self._thinking = False
        self._compaction = None  # one that failed was closed with its turn
        self._defusers = {kind: defuser.next_message() for kind, defuser in self._defusers.items()}

    def replayed(self, kind: str, text: str) -> str:
        """A stored text block of the model's (`kind`: its chunk kind), defused as its live
        stream was: the `[` it starts with is escaped after a block that ended with `!`."""
        defuser = self._defusers[kind] = self._defusers[kind].next_message()
        return defuser.feed(text) + defuser.flush()

    def interrupted(self, answer: str) -> list[Update]:
        """The mark a cancel put at the end of the answer it cut short (`answer`, as kept
        for the model), sent as the rest of that answer: the live thread shows what a
        replay of it will."""
        from hermes_core.loop.turn import INTERRUPTED_MARK

        rest = INTERRUPTED_MARK if answer == INTERRUPTED_MARK else f"\n\n{INTERRUPTED_MARK}"
        held = self.flush()
        if not answer.endswith(INTERRUPTED_MARK):
            return held
        return held + self._streamed(ANSWER, rest, defused=True)

    def plan_update(self, entries: Iterable[PlanEntry]) -> Update:
        """The `session/update` params for a whole plan (e.g. the stored plan on load)."""
        return self._wrap(plan_update(entries))

    def _wrap(self, update: Update) -> Update:
        return {"sessionId": self.session_id, "update": update}

    def _text(self, event: TextDelta) -> list[Update]:
        self._thinking = False
        return self._streamed(ANSWER, event.text)

    def _thought(self, event: ThoughtDelta) -> list[Update]:
        self._thinking = bool(event.text) or self._thinking
        return self._streamed(THOUGHT, event.text)

    def _streamed(self, kind: str, text: str, *, defused: bool = False) -> list[Update]:
        if not defused:
            text = self._defusers[kind].feed(text)
        if not text:
            return []
        message_id = self._message_ids.get(kind)
        if message_id is None:
            message_id = self._message_ids[kind] = uuid.uuid4().hex
        return [self._wrap(chunk(kind, {"type": "text", "text": text}, message_id))]

    def _restarted(self, event: AnswerRestarted) -> list[Update]:
        # Two signals, for two kinds of client: a new messageId for those that follow it,
        # and a line in the thought stream that every client shows between the dropped
        # text and the new answer (Zed starts a new text block after a thought).
        self._message_ids.pop(ANSWER, None)
        if not event.discarded:
            return []
        return self._status(Status("notice", ANSWER_RESTARTED))

    def _step_finished(self, event: StepFinished) -> list[Update]:
        self._message_ids.clear()  # the next model call's text is a new message
        return []

    def _plan(self, event: PlanUpdated) -> list[Update]:
        return [self._wrap(plan_update(event.entries))]

    def _usage(self, event: UsageUpdated) -> list[Update]:
        update: Update = {
            "sessionUpdate": "usage_update",
            "used": max(0, int(event.context_tokens)),
            "size": max(0, int(event.context_window)),
            "_meta": {
                "hermes": {
                    "turn": _counts(event.turn),
                    "total": _counts(event.total),
                }
            },
        }
        if event.cost_usd is not None:
            update["cost"] = {"amount": float(event.cost_usd), "currency": "USD"}
        return [self._wrap(update)]

    def _title(self, event: TitleChanged) -> list[Update]:
        return [
            self._wrap(
                {
                    "sessionUpdate": "session_info_update",
                    "title": event.title,
                    "updatedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                }
            )
        ]

    def _status(self, event: Status) -> list[Update]:
        if event.kind in ("compressing", "compressed"):
            return self._compaction_card(event)
        # A retry or a notice is worth a glance, not part of the answer: a thought keeps
        # it out of the text the user copies. One short plain sentence, a thought message of
        # its own: clients show a running thought in a box a line or a few high, scrolled
        # to its end (Toad showed a wrapped italic notice as its last fragment, "1)").
        line = status_sentence(event)
        if not line:
            return []
        self._message_ids.pop(THOUGHT, None)  # the model's next thinking is a new message
        # A blank line before it only when thinking was streamed: the notice is a paragraph.
        separator = "\n\n" if self._thinking else ""
        self._thinking = False
        update = chunk(THOUGHT, {"type": "text", "text": f"{separator}{line}\n\n"}, uuid.uuid4().hex)
        # Marked, so a client can show it as a status line rather than as the model's thinking.
        update["_meta"] = {"hermes": {"status": event.kind}}
        return [self._wrap(update)]

    def _compaction_card(self, event: Status) -> list[Update]:
        """A compression as a card of its own ("Compacted N messages"), not a thought line:
        it changed what the model remembers, which the user may want to find again."""
        updates: list[Update] = []
        if self._compaction is None:
            self._compaction = f"compact_{uuid.uuid4().hex[:12]}"
            title = "Compacting the conversation"
            updates += self.cards.started(ToolCallStarted(self._compaction, "compact", title, "think", {}))
            updates += self.cards.running(ToolCallRunning(self._compaction))
        if event.kind == "compressing":
            return updates + self.cards.note(ToolCallNote(self._compaction, event.message))
        call_id, self._compaction = self._compaction, None
        count = event.detail.get("messages")
        title = f"Compacted {count} messages" if isinstance(count, int) else "Compacted the conversation"
        finished = ToolCallFinished(call_id, "completed", event.message, raw_output=dict(event.detail))
        for update in self.cards.finished(finished):
            update["update"]["title"] = title
            updates.append(update)
        return updates


# What a failed model call that is retried was, in words, by the error's kind.
_RETRIED_BECAUSE = {
    "rate_limit": "Rate limited by the model provider",
    "transient": "The model provider failed to answer",
    "stale": "The model provider stopped sending",
}
# A line starting so would be a list item or a heading: its marker is escaped.
_BLOCK_MARKER = re.compile(r"^(\d*)([.)#+=-])")


def status_sentence(event: Status) -> str:
    """A status as one plain sentence: no emphasis, and nothing a Markdown client could
    take for a list or a heading."""
    detail = event.detail or {}
    if event.kind == "retrying" and {"attempt", "attempts", "delay"} <= detail.keys():
        because = _RETRIED_BECAUSE.get(str(detail.get("kind")), "The model call failed")
        return (
            f"{because}; retrying in {float(detail['delay']):.1f} s "
            f"(attempt {detail['attempt']} of {detail['attempts']})."
        )
    line = " ".join(event.message.split())
    if not line:
        return ""
    line = _MARKDOWN_SPECIAL.sub(r"\\\1", line)
    line = _BLOCK_MARKER.sub(r"\1\\\2", line)
    return line if line.endswith((".", "!", "?", ":")) else f"{line}."


def plan_update(entries: Iterable[PlanEntry]) -> Update:
    """The `plan` update (the update object, without sessionId) for the full entry list."""
    return {
        "sessionUpdate": "plan",
        "entries": [
            # The model's words, drawn as a list: nothing in them may hide the rest.
            {"content": defuse(shown(entry.content)), "priority": entry.priority, "status": entry.status}
            for entry in entries
        ],
    }


USAGE_FIELDS = tuple(field.name for field in dataclasses.fields(Usage))


def _counts(usage: Usage) -> dict[str, int]:
    """`dataclasses.asdict(usage)` without its deep copy of every count (a usage update
    goes out after every model call)."""
    return {name: getattr(usage, name) for name in USAGE_FIELDS}


def chunk(kind: str, block: Update, message_id: str | None = None) -> Update:
    """A message, thought or user chunk; the chunks of one message share a messageId."""
    update = {"sessionUpdate": kind, "content": block}
    if message_id is not None:
        update["messageId"] = message_id
    return update
