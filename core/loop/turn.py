"""One turn of the loop: the user's message in, a stream of typed events out.

`Turn.run` is a loop over `step`: steer, maybe compress, one model call (with
continuations), commit the assistant message, run its tool calls, decide whether the turn
goes on. It ends when the model answers without tool calls, the iteration budget is spent,
or the consuming task is cancelled. Errors the model can act on (bad tool arguments, a
tool that failed) go back to it as tool results (core/loop/tool_runner.py); the turn goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_core.events import (
    Event,
    MessageCommitted,
    Status,
    StepFinished,
    StopReason,
    TextDelta,
    TitleChanged,
    TurnEnded,
    UsageUpdated,
)
from hermes_core.loop.budget import IterationBudget
from hermes_core.loop.conversation import Conversation
from hermes_core.loop.inbox import TurnInbox
from hermes_core.loop.prepared_calls import PreparedCall
from hermes_core.loop.tool_runner import ToolRunner, call_cards
from hermes_core.messages import ContentPart, Message, TextPart, ToolCall
from hermes_core.models import Usage
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError, ToolSpec

if TYPE_CHECKING:
    from hermes_core.changes.watch import WorkspaceWatcher
    from hermes_core.execution.jobs import Jobs

MAX_CONTINUATIONS = 3  # "length" with visible text: ask the model to go on, this many times
MAX_ARGUMENT_REPAIRS = 3  # invalid tool arguments answered with an error, per turn
CONTINUE_PROMPT = "Your answer was cut off by the output limit. Continue exactly where it stopped."
GRACE_PROMPT = (
    "You have used this turn's budget of model calls. Do not call tools. Say briefly what you "
    "did, where things stand, and what remains to be done."
)
STEER_PREFIX = "(The user added this while you were working; take it into account:)"
TITLE_LENGTH = 60
INTERRUPTED_MARK = "[Interrupted by the user.]"
THOUGHT_ONLY_NOTICE = (
    "The model spent its whole output budget thinking and gave no answer. "
    "Raise max_output_tokens or lower the reasoning effort."
)


@dataclass(frozen=True, slots=True)
class RequestShape:
    """What a model request takes besides the history, read before each call (the mode and
    the effort can change while a turn runs)."""

    tools: list[ToolSpec]
    max_output_tokens: int | None
    reasoning_effort: str | None


@dataclass(frozen=True, slots=True)
class TurnServices:
    """What a turn uses besides its conversation and inbox; the agent builds it once."""

    system_prompt: str
    runner: ToolRunner
    jobs: Jobs  # background commands whose ends the model reads at its next call
    watcher: WorkspaceWatcher | None  # which changes were the agent's own
    opening: Callable[[], Awaitable[str | None]]  # what changed since the last turn
    stream: Callable[[ModelRequest], AsyncGenerator[Any, None]]  # one model call's stream
    record_usage: Callable[[Usage], None]
    compress: Callable[[bool], AsyncIterator[Event]]  # when near the window (or now, if True)
    usage_event: Callable[[Usage], UsageUpdated]
    shape: Callable[[], RequestShape]


@dataclass(slots=True)
class ModelTurn:
    """One turn of an agent's conversation, and what it has gathered; `stop` is set when
    it is over. (The protocol side's turn is `hermes_acp.session.turn.TurnRunner`.)"""

    conversation: Conversation
    services: TurnServices
    inbox: TurnInbox
    budget: IterationBudget
    usage: Usage = field(default_factory=Usage)
    text: list[str] = field(default_factory=list)  # the answer, model call by model call
    partial: list[str] = field(default_factory=list)  # the text of the model call in flight
    iteration: int = 0
    repairs: int = 0  # invalid tool arguments answered with an error
    stop: StopReason | None = None

    async def run(self, content: str | list[ContentPart], preamble: str | None) -> AsyncIterator[Event]:
        """The turn's events; the last is TurnEnded unless the consuming task is cancelled,
        in which case CancelledError propagates once streams are closed, commands killed
        and pending approvals withdrawn."""
        watcher = self.services.watcher
        async for event in self._open(content, preamble):
            yield event
        try:
            if watcher is not None:
                watcher.turn_started()  # from here on, changes are the agent's own work
            while self.stop is None:
                async for event in self.step():
                    yield event
        except asyncio.CancelledError:
            self._keep_interrupted()
            raise
        finally:
            if watcher is not None:
                watcher.turn_finished()
        yield TurnEnded(self.stop, self.usage, "".join(self.text))

    async def _open(self, content: str | list[ContentPart], preamble: str | None) -> AsyncIterator[Event]:
        """The user's message, with what changed since the last turn, and the session's title."""
        context = await self.services.opening()
        self.conversation.stopped(None)
        self.inbox.take_closing()  # a closing left by an earlier, cancelled turn
        preamble = "\n\n".join(p for p in (context, preamble) if p) or None
        user_message = Message(role="user", content=_with_preamble(content, preamble))
        self.conversation.append(user_message)
        yield MessageCommitted(user_message)
        if self.conversation.title is None:
            self.conversation.name(_title_from(_typed(content)))
            if self.conversation.title:
                yield TitleChanged(self.conversation.title)

    async def step(self) -> AsyncIterator[Event]:
        """One model call and its tool calls; sets `self.stop` when the turn is over."""
        if not self.budget.take():
            async for event in self._grace_call():
                yield event
            self.stop = StopReason.MAX_TURN_REQUESTS
            return
        self.iteration += 1
        steered = self._take_steer()
        if steered is not None:
            self.conversation.append(steered)
            yield MessageCommitted(steered)
        async for event in self.services.compress(False):
            yield event
        response: ModelResponse | None = None
        async for item in self._call_model():
            if isinstance(item, ModelResponse):
                response = item
            else:
                yield item
        assert response is not None
        yield self.services.usage_event(self.usage)
        assistant = self._assistant_message(response)
        calls = self.services.runner.prepare(assistant.tool_calls) if assistant.tool_calls else []
        if calls:
            assistant.display = call_cards(calls)
        self.conversation.append(assistant)
        yield MessageCommitted(assistant)
        yield StepFinished(self.iteration, response.finish_reason)
        if response.text:
            self.text.append(response.text)
        if calls:
            async for event in self._run_tools(calls):
                yield event
        elif not self.inbox.has_steers:  # else: the user added something the model has not read yet
            self.stop = _stop_reason(response)
            if self.stop is StopReason.MAX_TOKENS and not response.text and response.reasoning:
                yield Status("notice", THOUGHT_ONLY_NOTICE)

    async def _run_tools(self, calls: list[PreparedCall]) -> AsyncIterator[Event]:
        """Run one response's tool calls; their results go back to the model, whatever broke."""
        bad = [c for c in calls if c.error and c.tool is not None]
        self.repairs += len(bad)
        if self.repairs > MAX_ARGUMENT_REPAIRS:
            for c in bad:
                c.error = f"{c.error} The argument-repair budget for this turn is spent; the turn ends."
        async for event in self.services.runner.run(calls):
            if isinstance(event, MessageCommitted):
                self.conversation.append(event.message)
            yield event
        if any(c.cancels_turn for c in calls):
            self.stop = StopReason.CANCELLED
            return
        children = self.inbox.take_child_usage()
        if children is not None:  # subagents ran: their spending shows now
            self.usage += children
            yield self.services.usage_event(self.usage)
        closing_text = self.inbox.take_closing()
        if closing_text:  # a question the editor cannot show: it ends the turn
            closing = Message(role="assistant", content=closing_text)
            yield TextDelta(closing.text)
            self.conversation.append(closing)
            yield MessageCommitted(closing)
            self.text.append(closing.text)
            self.stop = StopReason.END_TURN
        elif self.repairs > MAX_ARGUMENT_REPAIRS:
            yield Status("notice", "The model kept sending invalid tool arguments; the turn ended.")
            self.stop = StopReason.END_TURN

    async def _call_model(self) -> AsyncIterator[Event | ModelResponse]:
        """One model call; when the output limit cut visible text, ask it to go on and join.

        Yields deltas and statuses, and last the joined ModelResponse; counts the usage.
        """
        joined: ModelResponse | None = None
        extra: list[Message] = []
        continuations = 0
        overflow_retried = False
        self.partial.clear()
        while True:
            response: ModelResponse | None = None
            streamed_text = False
            try:
                async with contextlib.aclosing(self.services.stream(self._request(extra))) as stream:
                    async for item in stream:
                        if isinstance(item, ModelResponse):
                            response = item
                            continue
                        if isinstance(item, TextDelta):
                            streamed_text = True
                            self.partial.append(item.text)
                        yield item
            except ProviderError as exc:
                if exc.kind is ErrorKind.CONTEXT_OVERFLOW and not overflow_retried and not streamed_text:
                    overflow_retried = True
                    async for event in self.services.compress(True):
                        yield event
                    continue
                raise
            assert response is not None, "a provider stream ended without a response"
            self.services.record_usage(response.usage)
            self.usage += response.usage
            joined = response if joined is None else _join(joined, response)
            if not (
                response.finish_reason == "length"
                and response.text
                and not response.tool_calls
                and continuations < MAX_CONTINUATIONS
            ):
                break
            continuations += 1
            yield Status("continuing", "The answer hit the output limit; asking the model to continue.")
            extra = [
                Message(role="assistant", content=joined.text),
                Message(role="user", content=CONTINUE_PROMPT),
            ]
        self.partial.clear()
        yield joined

    async def _grace_call(self) -> AsyncIterator[Event]:
        """The budget is spent: one last call without tools, so the user gets a summary."""
        request = self._request([Message(role="user", content=GRACE_PROMPT)], grace=True)
        response: ModelResponse | None = None
        async with contextlib.aclosing(self.services.stream(request)) as stream:
            async for item in stream:
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
        if response is None:
            return
        self.services.record_usage(response.usage)
        self.usage += response.usage
        assistant = Message(
            role="assistant",
            content=response.text,
            reasoning=response.reasoning or None,
            finish_reason=response.finish_reason,
            provider_data=response.provider_data,
        )
        self.conversation.append(assistant)
        yield MessageCommitted(assistant)
        if response.text:
            self.text.append(response.text)

    def _take_steer(self) -> Message | None:
        """What came in since the last model call: the user's steers, and one line per
        background job that ended."""
        jobs = self.services.jobs
        ended = jobs.take_lines() if jobs.unreported else []
        if not self.inbox.has_steers and not ended:
            return None
        texts = self.inbox.take_steers()
        steered = [STEER_PREFIX, *texts] if texts else []
        # A new user message at the end: the cached prefix of the conversation stays as it was.
        # `display`: what the user wrote, for a replay (the jobs' ends are on their cards).
        return Message(role="user", content="\n\n".join([*ended, *steered]), display={"steers": texts})

    def _request(self, extra: list[Message], *, grace: bool = False) -> ModelRequest:
        shape = self.services.shape()
        return ModelRequest(
            system=self.services.system_prompt,
            messages=self.conversation.request_history() + extra,
            tools=shape.tools,
            max_output_tokens=shape.max_output_tokens,
            reasoning_effort=shape.reasoning_effort,
            tool_choice_none=grace,
        )

    def _assistant_message(self, response: ModelResponse) -> Message:
        calls = []
        for call in response.tool_calls:
            calls.append(ToolCall(self.conversation.unique_call_id(call.id), call.name, call.arguments))
        return Message(
            role="assistant",
            content=response.text,
            tool_calls=calls,
            reasoning=response.reasoning or None,
            finish_reason=response.finish_reason,
            provider_data=response.provider_data,
        )

    def _keep_interrupted(self) -> None:
        """A cancel cut the turn short: keep what the user saw, marked, for the model and a
        reloaded session."""
        partial = "".join(self.partial)
        text = f"{partial}\n\n{INTERRUPTED_MARK}" if partial.strip() else INTERRUPTED_MARK
        self.conversation.stopped(Message(role="assistant", content=text, finish_reason="interrupted"))


def _stop_reason(response: ModelResponse) -> StopReason:
    if response.finish_reason == "length":
        return StopReason.MAX_TOKENS
    if response.finish_reason in ("refusal", "content_filter"):
        return StopReason.REFUSAL
    return StopReason.END_TURN


def _join(first: ModelResponse, second: ModelResponse) -> ModelResponse:
    return ModelResponse(
        text=first.text + second.text,
        reasoning=first.reasoning + second.reasoning,
        tool_calls=first.tool_calls + second.tool_calls,
        finish_reason=second.finish_reason,
        usage=first.usage + second.usage,
        provider_data=second.provider_data or first.provider_data,
        model=second.model or first.model,
    )


def _with_preamble(content: str | list[ContentPart], preamble: str | None) -> str | list[ContentPart]:
    if not preamble:
        return content
    if isinstance(content, str):
        return f"{preamble}\n\n{content}"
    return [TextPart(preamble), *content]


def _typed(content: str | list[ContentPart]) -> str:
    """What the user typed: the text parts, without the files they attached."""
    if isinstance(content, str):
        return content
    return " ".join(part.text for part in content if isinstance(part, TextPart) and not part.attached)


def _title_from(text: str) -> str | None:
    line = " ".join(text.split())
    if not line:
        return None
    if len(line) <= TITLE_LENGTH:
        return line
    cut = line[:TITLE_LENGTH].rsplit(" ", 1)[0] or line[:TITLE_LENGTH]
    return cut.rstrip(",.;:") + "…"
