"""Typed events the agent loop emits: one stream, translated by whoever drives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from hermes_core.models import Usage

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


class StopReason(StrEnum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    REFUSAL = "refusal"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Location:
    path: str  # absolute
    line: int | None = None  # 1-based


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str  # absolute
    old_text: str | None  # None for a new file
    new_text: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model asked for a tool; it has not run yet (it may still need approval)."""

    call_id: str
    tool: str
    title: str
    kind: ToolKind
    arguments: dict[str, Any]
    locations: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallRunning:
    """The tool was approved (or needed no approval) and is running now."""

    call_id: str
    terminal_id: str | None = None  # set when an editor terminal shows the command live


@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    call_id: str
    output: str = ""  # streamed command output, appended
    terminal_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallNote:
    """The card's text so far, replacing what it showed (a subagent's progress)."""

    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    call_id: str
    status: Literal["completed", "failed"]
    result: str  # what the model reads
    diff: FileDiff | None = None
    raw_output: dict[str, Any] | None = None
    exit_code: int | None = None
    signal: str | None = None
    terminal_id: str | None = None
    shown: str | None = None  # what the user sees instead of `result` ("" for nothing)


@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class UsageUpdated:
    turn: Usage  # this turn so far
    total: Usage  # the session so far
    context_tokens: int  # estimated size of the context the next call sends
    context_window: int
    cost_usd: float | None = None  # the session so far, when prices are known


@dataclass(frozen=True, slots=True)
class Status:
    kind: Literal[
        "retrying",
        "falling_back",
        "compressing",
        "compressed",
        "continuing",
        "notice",
        "lowering_output",
        "stripping_reasoning",
        "rotating_key",
        "context_limit",
    ]
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TitleChanged:
    title: str


@dataclass(frozen=True, slots=True)
class MessageCommitted:
    """A message became part of the history (the store persists it now)."""

    message: Any  # hermes_core.messages.Message; Any to keep this module dependency-free


@dataclass(frozen=True, slots=True)
class HistoryReplaced:
    """Compression rewrote the history; this is the whole new history (the store replaces its copy)."""

    messages: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class AnswerRestarted:
    """A model call's stream broke after part of its answer was shown, and the retry
    answers differently: the text shown so far is void, the text that follows replaces it
    (and the stored answer is the retry's alone)."""

    discarded: str  # the text that was shown and is now dropped


@dataclass(frozen=True, slots=True)
class StepFinished:
    iteration: int
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """Always the last event of a turn that was not cancelled."""

    stop_reason: StopReason
    usage: Usage  # this turn
    text: str = ""  # the answer's text, all model calls of the turn joined


Event = (
    TextDelta
    | ThoughtDelta
    | ToolCallStarted
    | ToolCallRunning
    | ToolCallProgress
    | ToolCallNote
    | ToolCallFinished
    | PlanUpdated
    | UsageUpdated
    | Status
    | AnswerRestarted
    | TitleChanged
    | MessageCommitted
    | HistoryReplaced
    | StepFinished
    | TurnEnded
)
