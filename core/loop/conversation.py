"""A conversation: its history and what it cost, owned by the agent it belongs to.

The history as the user and the model saw it, the same history as requests send it
(repaired incrementally as it grows), the tool-call ids already used, its title, and
what it spent. Turns append to it; compression, /rewind and /clear replace it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from hermes_core.messages import Message, RepairedHistory
from hermes_core.models import Usage


@dataclass(slots=True, eq=False)
class Conversation:
    messages: list[Message] = field(default_factory=list)
    title: str | None = None
    usage: Usage = field(default_factory=Usage)  # the whole session's, subagents' included
    cost_usd: float | None = None  # None: no price known for the models it used
    context_tokens: int = 0  # the context's size at the last call or estimate
    # What a cancelled turn had shown when it stopped; the embedder stores it.
    interrupted: Message | None = None
    repaired: RepairedHistory = field(default_factory=RepairedHistory)
    used_call_ids: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.messages = list(self.messages)
        self.used_call_ids |= {call.id for message in self.messages for call in message.tool_calls}

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def replace(self, messages: list[Message], context_tokens: int) -> None:
        """A rewritten history (compression, /rewind, /clear) and its size."""
        self.messages = list(messages)
        self.context_tokens = context_tokens

    def request_history(self) -> list[Message]:
        """The history as a request sends it (alternation repaired)."""
        return self.repaired.of(self.messages)

    def unique_call_id(self, call_id: str) -> str:
        """The model's id for a tool call, or a fresh one when it is empty or taken (some
        local models reuse ids like "call_0"; editors need unique ones)."""
        if not call_id or call_id in self.used_call_ids:
            call_id = f"call_{uuid.uuid4().hex[:16]}"
        self.used_call_ids.add(call_id)
        return call_id

    def name(self, title: str | None) -> None:
        self.title = title

    def spend(self, usage: Usage, cost_usd: float | None) -> None:
        """One model call's usage (and its cost, when its price is known)."""
        self.usage += usage
        if cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd
        self.context_tokens = usage.input_tokens + usage.output_tokens

    def absorb(self, usage: Usage, cost_usd: float | None) -> None:
        """A subagent's spending, counted as this conversation's."""
        self.usage += usage
        if cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd

    def measured(self, context_tokens: int) -> None:
        self.context_tokens = context_tokens

    def restore(self, usage: Usage, cost_usd: float | None) -> None:
        """What a stored session had spent before it was loaded."""
        self.usage = usage
        self.cost_usd = cost_usd

    def stopped(self, message: Message | None) -> None:
        """A cancel cut the turn short: `message` is what the user saw (None at a new turn)."""
        self.interrupted = message
        if message is not None:
            self.messages.append(message)

    def take_interrupted(self) -> Message | None:
        message, self.interrupted = self.interrupted, None
        return message
