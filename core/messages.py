"""The conversation model: OpenAI-style roles, provider-neutral content.

Providers translate these to and from their wire shapes. `provider_data` carries
what a provider must get back verbatim on the next call (Anthropic thinking
signatures, Responses reasoning items) without the rest of the engine knowing it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

T = TypeVar("T")

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(slots=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"
    # A file or resource the user attached, as the model reads it: not what they typed (a
    # session's title is made from what they typed).
    attached: bool = False


@dataclass(slots=True)
class ImagePart:
    mime_type: str
    data: str  # base64, no data: prefix
    type: Literal["image"] = "image"

    @property
    def data_url(self) -> str:
        """The image as a `data:` URL (how the OpenAI APIs take an inline image)."""
        return f"data:{self.mime_type};base64,{self.data}"


ContentPart = TextPart | ImagePart


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it


@dataclass(slots=True)
class Message:
    role: Role
    content: str | list[ContentPart] = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None  # tool name, on role="tool"
    reasoning: str | None = None
    finish_reason: str | None = None
    provider_data: dict[str, Any] | None = None
    is_error: bool = False  # a tool result that reports a failure
    # What an editor needs to show this message again (session/load): for a tool result
    # {"title", "kind", "status", "locations", "diff", "raw_input", "raw_output", ...}.
    # Providers never send it.
    display: dict[str, Any] | None = None
    # What the providers derived from this message (its wire form per API shape, its token
    # estimate), so a long history is not converted again on every model call. Assigning
    # any field a model reads drops it (`__setattr__`), so a derived form cannot outlive
    # the content it came from; a replaced message is a new object with none.
    memo: dict[Any, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _MEMO_SURVIVES and getattr(self, "memo", None) is not None:
            # Derived forms exist: drop them, and tell every `Growth` its sums are stale.
            object.__setattr__(self, "memo", None)
            _EDITS[0] += 1
        object.__setattr__(self, name, value)

    def memoised(self, key: Any, derive: Callable[[Message], T]) -> T:
        """`derive(self)`, computed once per `key` while the message stays as it is.

        Nothing in the engine edits a committed message's nested parts in place (its
        content list, tool calls, provider_data); code that would must assign the field
        anew, which drops the memo."""
        memo = self.memo
        if memo is None:
            memo = {}
            object.__setattr__(self, "memo", memo)
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = derive(self)
            return value

    @property
    def is_notice(self) -> bool:
        """Kept for the user, never sent to a model: why a turn failed, shown again when
        the session is reloaded (`display={"notice": ...}` on an assistant message)."""
        return bool(self.display and self.display.get("notice"))

    @property
    def text(self) -> str:
        """The message's plain text, images left out."""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if isinstance(part, TextPart))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, str):
            data["content"] = self.content
        else:
            data["content"] = [_part_to_dict(part) for part in self.content]
        if self.tool_calls:
            data["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        for key in ("tool_call_id", "name", "reasoning", "finish_reason", "provider_data", "display"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        if self.is_error:
            data["is_error"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        content = data.get("content", "")
        if not isinstance(content, str):
            content = [_part_from_dict(part) for part in content]
        return cls(
            role=data["role"],
            content=content,
            tool_calls=[ToolCall(**c) for c in data.get("tool_calls", [])],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning=data.get("reasoning"),
            finish_reason=data.get("finish_reason"),
            provider_data=data.get("provider_data"),
            display=data.get("display"),
            is_error=bool(data.get("is_error", False)),
        )


# Fields whose change leaves what a model is sent as it was: the editor-only display, and
# the memo itself.
_MEMO_SURVIVES = frozenset({"display", "memo"})
# How many messages with derived forms have had a field assigned, process-wide: rare (no
# engine code does it), so one edit anywhere makes every `Growth` start over.
_EDITS = [0]


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {"type": "image", "mime_type": part.mime_type, "data": part.data}


def _part_from_dict(data: dict[str, Any]) -> ContentPart:
    if data["type"] == "text":
        return TextPart(data["text"])
    return ImagePart(mime_type=data["mime_type"], data=data["data"])


def user(content: str | list[ContentPart]) -> Message:
    return Message(role="user", content=content)


class Growth:
    """What a history gained since the last call, for work over it that is incremental and
    never stale: a history grows by appending; compression and /clear put a new list in
    its place, an edit a new message object or an assigned field (`Message.__setattr__`).
    The identity check runs in C: ~20 ns a message."""

    def __init__(self) -> None:
        self._seen: list[Message] = []
        self._edits = _EDITS[0]

    def added(self, messages: list[Message]) -> tuple[bool, list[Message]]:
        """(whether `messages` is the last call's history, unedited, with messages
        appended; those messages, or all of them when it is not)."""
        seen = self._seen
        continued = (
            self._edits == _EDITS[0] and len(messages) >= len(seen) and all(map(operator.is_, seen, messages))
        )
        if not continued:
            seen.clear()
            self._edits = _EDITS[0]
        added = messages[len(seen) :]
        seen.extend(added)
        return continued, added


def repair_alternation(messages: list[Message]) -> list[Message]:
    """Make a history every provider accepts.

    Drops assistant tool calls that never got a result (a turn cut short by a
    crash or a cancel) and answers them with a synthetic "interrupted" result
    instead, so the next request is not rejected for a dangling tool call. Notices
    (for the user only) are left out.
    """
    return RepairedHistory().of(messages)


class RepairedHistory:
    """`repair_alternation` of a history that grows between calls, repairing only what it
    gained: the result for a list that starts with the same message objects as the last
    one is extended; for any other list (compressed, cleared, edited) it starts over."""

    def __init__(self) -> None:
        self._growth = Growth()
        self._repaired: list[Message] = []
        self._pending: dict[str, ToolCall] = {}

    def of(self, messages: list[Message]) -> list[Message]:
        continued, added = self._growth.added(messages)
        if not continued:
            self._repaired = []
            self._pending = {}
        repaired, pending = self._repaired, self._pending
        for message in added:
            if message.is_notice:
                continue
            if message.role == "tool":
                if message.tool_call_id in pending:
                    pending.pop(message.tool_call_id)
                    repaired.append(message)
                continue
            repaired.extend(_interrupted(pending))
            pending.clear()
            repaired.append(message)
            if message.role == "assistant":
                pending.update((call.id, call) for call in message.tool_calls)
        return repaired + _interrupted(pending)


def _interrupted(pending: dict[str, ToolCall]) -> list[Message]:
    return [
        Message(
            role="tool",
            content="Interrupted: this tool call did not complete.",
            tool_call_id=call.id,
            name=call.name,
            is_error=True,
        )
        for call in pending.values()
    ]
