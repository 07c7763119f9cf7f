"""Agent.run_turn(): the loop.

One turn: the user's message in, a stream of typed events out, until the model
answers without tool calls, the iteration budget is spent, or the consuming task
is cancelled. `run_turn` is a loop over `_step`: steer, maybe compress, one model
call (with continuations), commit the assistant message, run its tool calls, decide
whether the turn goes on. Tools of one response run concurrently where that is safe;
results go back to the model in the model's order.

Everything a plain text turn runs is here (and in the messages, events and models it
speaks), so a reader follows a prompt through one file; compression
(core/compression.py) and subagents (core/tools/delegate.py) live apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.approval import ApprovalMemory, ApprovalPolicy, Approver, Mode
from core.config import Settings
from core.events import (
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
from core.memory import MemoryStore
from core.messages import ContentPart, Message, TextPart, ToolCall, repair_alternation
from core.models import Usage
from core.providers.base import ErrorKind, ModelRequest, ModelResponse, Provider, ProviderError, ToolSpec
from core.tool_runner import PreparedCall, ToolRunner, call_cards
from core.tools.base import SessionToolState, Tool, ToolLimits
from core.tools.registry import ToolRegistry
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.tools.clarify import Asker
    from core.tools.delegate import ChildSink
    from core.watch import WorkspaceWatcher

log = logging.getLogger(__name__)

MAX_CONTINUATIONS = 3  # "length" with visible text: ask the model to go on, this many times
MAX_ARGUMENT_REPAIRS = 3  # invalid tool arguments answered with an error, per turn
CONTINUE_PROMPT = "Your answer was cut off by the output limit. Continue exactly where it stopped."
GRACE_PROMPT = (
    "You have used this turn's budget of model calls. Do not call tools. Say briefly what you "
    "did, where things stand, and what remains to be done."
)
TITLE_LENGTH = 60
INTERRUPTED_MARK = "[Interrupted by the user.]"
STEER_PREFIX = "(The user added this while you were working; take it into account:)"
THOUGHT_ONLY_NOTICE = (
    "The model spent its whole output budget thinking and gave no answer. "
    "Raise max_output_tokens or lower the reasoning effort."
)


@dataclass(slots=True)
class IterationBudget:
    """The model-call budget of one turn, shared by the whole tree of agents it starts.

    A subagent's calls count against its own cap and against every budget above it, so a
    turn that delegates cannot spend more than `max_iterations` calls however it splits them.
    """

    cap: int
    parent: IterationBudget | None = None
    used: int = 0

    def take(self) -> bool:
        """Count one model call; False (and nothing counted) when this budget or one above
        it is spent."""
        if not self.available():
            return False
        budget: IterationBudget | None = self
        while budget is not None:
            budget.used += 1
            budget = budget.parent
        return True

    def available(self) -> bool:
        budget: IterationBudget | None = self
        while budget is not None:
            if budget.used >= budget.cap:
                return False
            budget = budget.parent
        return True

    def child(self, cap: int) -> IterationBudget:
        return IterationBudget(cap=cap, parent=self)


@dataclass(slots=True)
class Turn:
    """What the running turn has gathered; `stop` is set when it is over."""

    budget: IterationBudget
    usage: Usage = field(default_factory=Usage)
    text: list[str] = field(default_factory=list)  # the answer, model call by model call
    partial: list[str] = field(default_factory=list)  # the text of the model call in flight
    iteration: int = 0
    repairs: int = 0  # invalid tool arguments answered with an error
    stop: StopReason | None = None


class Agent:
    """One conversation: history, workspace, tools, approvals, model. One turn at a time."""

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Workspace,
        approver: Approver,
        model: str | None = None,  # default: the settings' model
        providers: list[Provider] | None = None,
        tools: ToolRegistry | None = None,
        extra_tools: Sequence[Tool] = (),
        mode: Mode | None = None,
        messages: list[Message] | None = None,
        system_prompt: str | None = None,
        approvals: ApprovalMemory | None = None,
        tool_state: SessionToolState | None = None,
        title: str | None = None,
        watcher: WorkspaceWatcher | None = None,
        delegation: bool = True,
        session_id: str | None = None,
    ) -> None:
        self.settings = settings
        self.session_id = session_id
        self.workspace = workspace
        self.approver = approver
        self.memory = _memory_store(settings, workspace)
        # The built-in tools and memory unless a registry is given; then the embedder's own
        # (past-session search, MCP servers). Fixed for the session: prompt caches key on it.
        self.tools = tools if tools is not None else _default_registry(self.memory)
        for tool in extra_tools:
            self.tools.register(tool)
        if tools is None:
            from core.tools.clarify import ClarifyTool

            self.tools.register(ClarifyTool(self))
            if delegation and settings.max_subagents > 0:
                from core.tools.delegate import DelegateTool

                self.tools.register(DelegateTool(self))
        self.approvals = approvals if approvals is not None else ApprovalMemory()
        self.policy = ApprovalPolicy(mode or Mode(settings.default_mode), self.approvals)
        self.messages: list[Message] = list(messages or [])
        self.tool_state = tool_state if tool_state is not None else SessionToolState()
        self.limits = ToolLimits(command_timeout=settings.command_timeout_seconds)
        self.runner = ToolRunner(
            tools=self.tools,
            policy=self.policy,
            approver=approver,
            workspace=workspace,
            state=self.tool_state,
            limits=self.limits,
        )
        self.title = title
        self.watcher = watcher  # files the user changed between turns, for the next message
        self.reasoning_effort: str | None = settings.reasoning_effort
        self._model = model or settings.model
        self._providers = providers
        self._retired: list[Provider] = []  # replaced by a model switch; closed by close_retired()
        self._resilient: Any = None
        self.system_prompt = system_prompt if system_prompt is not None else self._build_system_prompt()
        self.usage_total = Usage()
        self.cost_usd: float | None = None
        self.context_tokens = 0
        self._used_call_ids: set[str] = {c.id for m in self.messages for c in m.tool_calls}
        self._known_facts: set[str] | None = None  # memory the model has seen; filled lazily
        self._steers: list[str] = []  # the user's additions to the running turn (/steer)
        self._tool_specs: dict[bool, list[ToolSpec]] = {}  # fixed for the session: caches key on it
        self.budget: IterationBudget | None = None  # the running turn's, shared with its subagents
        self.child_sink: ChildSink | None = None  # stores a finished subagent's transcript
        self.asker: Asker | None = None  # puts the clarify tool's questions to the user
        self._final_message: str | None = None  # a tool ended the turn with this text
        self.child_usage = Usage()  # subagents' usage not yet counted in the turn's
        # What a cancelled turn had shown when it stopped; the embedder stores it.
        self.interrupted: Message | None = None

    # -- settable state -------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self.policy.mode

    @mode.setter
    def mode(self, value: Mode) -> None:
        self.policy.mode = Mode(value)

    @property
    def model(self) -> str:
        return self._model

    @model.setter
    def model(self, value: str) -> None:
        if value != self._model:
            self._model = value
            self._retired.extend(self._providers or [])
            self._providers = None
            self._resilient = None

    async def close_retired(self) -> None:
        """Close the provider clients (their connection pools) a model switch replaced."""
        retired, self._retired = self._retired, []
        for provider in retired:
            try:
                await provider.aclose()
            except Exception:  # closing is best effort; the others still get closed
                log.debug("closing a retired provider failed", exc_info=True)

    @property
    def context_window(self) -> int:
        from core.models import context_window

        return context_window(self._model, self.settings.context_windows)

    @property
    def providers(self) -> list[Provider]:
        if self._providers is None:
            from core.providers.resolve import build_chain

            self._providers = build_chain(self.settings, self._model)
        return self._providers

    def _model_stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        if self._resilient is None:
            from core.providers.resilient import ResilientModel

            self._resilient = ResilientModel(
                self.providers,
                max_retries=self.settings.max_retries,
                base_delay=self.settings.retry_base_seconds,
                cap_delay=self.settings.retry_cap_seconds,
            )
        return self._resilient.stream(request)

    # -- the turn ------------------------------------------------------------------

    async def _turn_context(self) -> str | None:
        """What changed outside the conversation since the last turn: files the user
        edited, and memory saved since the system prompt was fixed (by another session,
        or by hand) that the model has not seen yet."""
        from core.context import turn_preamble

        changed: list[str] = []
        if self.watcher is not None:
            await self.watcher.start()  # idempotent; the first turn pays the directory walk
            changed = self.watcher.drain()
        recalled = await asyncio.to_thread(self._recall_memory)
        return turn_preamble(changed, recalled)

    def _recall_memory(self) -> str | None:
        try:
            facts = self.memory.all_facts()
        except OSError as exc:
            log.warning("cannot read memory: %s", exc)
            return None
        if self._known_facts is None:
            # In the system prompt, or already in the conversation (recalled by an earlier
            # turn, or saved by the model itself): nothing to repeat.
            seen = [self.system_prompt, *(_message_words(m) for m in self.messages)]
            self._known_facts = {fact for fact in facts if any(fact in text for text in seen)}
        known = self._known_facts | self.memory.added_here
        fresh = [fact for fact in facts if fact not in known]
        self._known_facts.update(fresh)
        return "\n".join(f"- {fact}" for fact in fresh) or None

    def steer(self, text: str) -> None:
        """Add the user's text to the running turn: the model reads it at its next call (one
        more call if it was about to finish; a steer that lands after the turn's last call
        opens the next turn)."""
        self._steers.append(text)

    def _steer_message(self) -> Message | None:
        if not self._steers:
            return None
        texts, self._steers = self._steers, []
        # A new user message at the end: the cached prefix of the conversation stays as it was.
        return Message(role="user", content="\n\n".join([STEER_PREFIX, *texts]))

    def _take_child_usage(self) -> Usage | None:
        usage, self.child_usage = self.child_usage, Usage()
        return usage if usage != Usage() else None

    def end_turn_with(self, text: str) -> None:
        """A tool asks that the turn end once its calls are done, with this as the answer."""
        self._final_message = text

    def _closing_message(self) -> Message | None:
        text, self._final_message = self._final_message, None
        return Message(role="assistant", content=text) if text else None

    def _keep_interrupted(self, partial: str) -> None:
        """A cancel cut the turn short: keep what the user saw, marked, for the model and a
        reloaded session."""
        text = f"{partial}\n\n{INTERRUPTED_MARK}" if partial.strip() else INTERRUPTED_MARK
        message = Message(role="assistant", content=text, finish_reason="interrupted")
        self.messages.append(message)
        self.interrupted = message

    async def run_turn(
        self,
        content: str | list[ContentPart],
        *,
        preamble: str | None = None,
        budget: IterationBudget | None = None,
    ) -> AsyncIterator[Event]:
        """Yield the turn's events; the last is TurnEnded unless the consuming task is
        cancelled, in which case CancelledError propagates once streams are closed,
        commands killed and pending approvals withdrawn. `budget`: a subagent's share of
        its parent's turn (a turn of its own has `max_iterations` calls)."""
        turn = Turn(budget or IterationBudget(self.settings.max_iterations))
        self.budget = turn.budget
        async for event in self._open(turn, content, preamble):
            yield event
        try:
            if self.watcher is not None:
                self.watcher.turn_started()  # from here on, changes are the agent's own work
            while turn.stop is None:
                async for event in self._step(turn):
                    yield event
        except asyncio.CancelledError:
            self._keep_interrupted("".join(turn.partial))
            raise
        finally:
            if self.watcher is not None:
                self.watcher.turn_finished()
        yield TurnEnded(turn.stop, turn.usage, "".join(turn.text))

    async def _open(
        self, turn: Turn, content: str | list[ContentPart], preamble: str | None
    ) -> AsyncIterator[Event]:
        """The user's message, with what changed since the last turn, and the session's title."""
        await self.close_retired()  # a switch made outside the ACP server (library use)
        context = await self._turn_context()
        preamble = "\n\n".join(p for p in (context, preamble) if p) or None
        if self._resilient is not None:
            self._resilient.reset()  # a fallback carries a turn to its end, not the next one
        user_message = Message(role="user", content=_with_preamble(content, preamble))
        self.messages.append(user_message)
        yield MessageCommitted(user_message)
        if self.title is None:
            self.title = _title_from(user_message.text if preamble is None else _plain(content))
            if self.title:
                yield TitleChanged(self.title)
        self.interrupted = None
        self._final_message = None

    async def _step(self, turn: Turn) -> AsyncIterator[Event]:
        """One model call and its tool calls; sets `turn.stop` when the turn is over."""
        if not turn.budget.take():
            async for event in self._grace_call(turn):
                yield event
            turn.stop = StopReason.MAX_TURN_REQUESTS
            return
        turn.iteration += 1
        steered = self._steer_message()
        if steered is not None:
            self.messages.append(steered)
            yield MessageCommitted(steered)
        async for event in self._maybe_compress():
            yield event
        response: ModelResponse | None = None
        async for item in self._call_with_continuations(turn):
            if isinstance(item, ModelResponse):
                response = item
            else:
                yield item
        assert response is not None
        yield self.usage_event(turn.usage)
        assistant = self._assistant_message(response)
        calls = self.runner.prepare(assistant.tool_calls) if assistant.tool_calls else []
        if calls:
            assistant.display = call_cards(calls)
        self.messages.append(assistant)
        yield MessageCommitted(assistant)
        yield StepFinished(turn.iteration, response.finish_reason)
        if response.text:
            turn.text.append(response.text)
        if calls:
            async for event in self._run_tools(turn, calls):
                yield event
        elif not self._steers:  # else: the user added something the model has not read yet
            turn.stop = self._stop_reason(response)
            if turn.stop is StopReason.MAX_TOKENS and not response.text and response.reasoning:
                yield Status("notice", THOUGHT_ONLY_NOTICE)

    async def _run_tools(self, turn: Turn, calls: list[PreparedCall]) -> AsyncIterator[Event]:
        """Run one response's tool calls; their results go back to the model, whatever broke."""
        bad = [c for c in calls if c.error and c.tool is not None]
        turn.repairs += len(bad)
        if turn.repairs > MAX_ARGUMENT_REPAIRS:
            for c in bad:
                c.error = f"{c.error} The argument-repair budget for this turn is spent; the turn ends."
        async for event in self.runner.run(calls):
            if isinstance(event, MessageCommitted):
                self.messages.append(event.message)
            yield event
        if any(c.cancels_turn for c in calls):
            turn.stop = StopReason.CANCELLED
            return
        children = self._take_child_usage()
        if children is not None:  # subagents ran: their spending shows now
            turn.usage += children
            yield self.usage_event(turn.usage)
        closing = self._closing_message()
        if closing is not None:  # a question the editor cannot show: it ends the turn
            yield TextDelta(closing.text)
            self.messages.append(closing)
            yield MessageCommitted(closing)
            turn.text.append(closing.text)
            turn.stop = StopReason.END_TURN
        elif turn.repairs > MAX_ARGUMENT_REPAIRS:
            yield Status("notice", "The model kept sending invalid tool arguments; the turn ended.")
            turn.stop = StopReason.END_TURN

    async def _call_with_continuations(self, turn: Turn) -> AsyncIterator[Event | ModelResponse]:
        """One model call; when the output limit cut visible text, ask it to go on and join.

        Yields deltas and statuses, and last the joined ModelResponse; counts the usage.
        """
        joined: ModelResponse | None = None
        extra: list[Message] = []
        continuations = 0
        overflow_retried = False
        turn.partial.clear()
        while True:
            response: ModelResponse | None = None
            streamed_text = False
            try:
                async with contextlib.aclosing(self._model_stream(self._request(extra))) as stream:
                    async for item in stream:
                        if isinstance(item, ModelResponse):
                            response = item
                            continue
                        if isinstance(item, TextDelta):
                            streamed_text = True
                            turn.partial.append(item.text)
                        yield item
            except ProviderError as exc:
                if exc.kind is ErrorKind.CONTEXT_OVERFLOW and not overflow_retried and not streamed_text:
                    overflow_retried = True
                    async for event in self._maybe_compress(force=True):
                        yield event
                    continue
                raise
            assert response is not None, "a provider stream ended without a response"
            self.record_usage(response.usage)
            turn.usage += response.usage
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
        turn.partial.clear()
        yield joined

    async def _grace_call(self, turn: Turn) -> AsyncIterator[Event]:
        """The budget is spent: one last call without tools, so the user gets a summary."""
        request = self._request([Message(role="user", content=GRACE_PROMPT)], grace=True)
        response: ModelResponse | None = None
        async with contextlib.aclosing(self._model_stream(request)) as stream:
            async for item in stream:
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
        if response is None:
            return
        self.record_usage(response.usage)
        turn.usage += response.usage
        assistant = Message(
            role="assistant",
            content=response.text,
            reasoning=response.reasoning or None,
            finish_reason=response.finish_reason,
            provider_data=response.provider_data,
        )
        self.messages.append(assistant)
        yield MessageCommitted(assistant)
        if response.text:
            turn.text.append(response.text)

    def tool_specs(self, *, read_only: bool = False) -> list[ToolSpec]:
        """The tool list sent to the model (read-only tools in plan mode); built once."""
        if read_only not in self._tool_specs:
            self._tool_specs[read_only] = self.tools.specs(read_only=read_only)
        return self._tool_specs[read_only]

    def _request(self, extra: list[Message], *, grace: bool = False) -> ModelRequest:
        return ModelRequest(
            system=self.system_prompt,
            messages=repair_alternation(self.messages) + extra,
            tools=self.tool_specs(read_only=self.mode is Mode.PLAN),
            max_output_tokens=self.settings.max_output_tokens,
            reasoning_effort=self.reasoning_effort,
            tool_choice_none=grace,
        )

    def _assistant_message(self, response: ModelResponse) -> Message:
        calls = []
        for call in response.tool_calls:
            call_id = call.id
            if not call_id or call_id in self._used_call_ids:
                # Some local models reuse ids like "call_0"; editors need unique ones.
                call_id = f"call_{uuid.uuid4().hex[:16]}"
            self._used_call_ids.add(call_id)
            calls.append(ToolCall(call_id, call.name, call.arguments))
        return Message(
            role="assistant",
            content=response.text,
            tool_calls=calls,
            reasoning=response.reasoning or None,
            finish_reason=response.finish_reason,
            provider_data=response.provider_data,
        )

    @staticmethod
    def _stop_reason(response: ModelResponse) -> StopReason:
        if response.finish_reason == "length":
            return StopReason.MAX_TOKENS
        if response.finish_reason in ("refusal", "content_filter"):
            return StopReason.REFUSAL
        return StopReason.END_TURN

    # -- context ---------------------------------------------------------------------

    def _build_system_prompt(self) -> str:
        from core.context import build_system_prompt

        return build_system_prompt(
            cwd=self.workspace.scope.cwd,
            extra_roots=list(self.workspace.scope.extra_roots),
            tool_names=self.tools.names(),
            memory=self.memory,
            skills=list(getattr(self.tools.get("skill"), "skills", {}).values()),
        )

    def estimate_context(self) -> int:
        from core.context import estimate_messages_tokens

        return estimate_messages_tokens(self.system_prompt, self.messages, self.tool_specs())

    async def _maybe_compress(self, *, force: bool = False) -> AsyncIterator[Event]:
        """Compress the conversation when it nears the context window (or now, if forced)."""
        from core.context import should_compress

        self.context_tokens = self.estimate_context()
        settings = self.settings
        window, threshold = self.context_window, settings.compression_threshold
        if force or (settings.auto_compact and should_compress(self.context_tokens, window, threshold)):
            from core.compression import compress

            async for event in compress(self):
                yield event

    def compact(self) -> AsyncIterator[Event]:
        """Force a compression now (/compact)."""
        return self._maybe_compress(force=True)

    def usage_event(self, turn_usage: Usage) -> UsageUpdated:
        return UsageUpdated(
            turn=turn_usage,
            total=self.usage_total,
            context_tokens=self.context_tokens,
            context_window=self.context_window,
            cost_usd=self.cost_usd,
        )

    def record_usage(self, usage: Usage) -> None:
        from core.models import cost_usd, normalise

        self.usage_total += usage
        prices = self.settings.prices
        price = prices.get(self._model) or prices.get(normalise(self._model))
        if price is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd(usage, price)
        self.context_tokens = usage.input_tokens + usage.output_tokens

    async def release_processes(self) -> None:
        """Kill the background processes this agent's tools started."""
        for handle, process in list(self.tool_state.processes.items()):
            with contextlib.suppress(Exception):
                await process.release()
            self.tool_state.processes.pop(handle, None)

    async def aclose(self) -> None:
        """Kill background processes, stop the watcher, close provider clients."""
        if self.watcher is not None:
            await self.watcher.aclose()
        await self.release_processes()
        await self.close_retired()
        for provider in self._providers or []:
            with contextlib.suppress(Exception):
                await provider.aclose()


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


def _message_words(message: Message) -> str:
    """The message's text and its tool calls' arguments (JSON, unescaped where it parses)."""
    parts = [message.text]
    for call in message.tool_calls:
        try:
            parts.append(str(json.loads(call.arguments)))
        except ValueError:
            parts.append(call.arguments)
    return "\n".join(parts)


def _plain(content: str | list[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    return " ".join(part.text for part in content if isinstance(part, TextPart))


def _title_from(text: str) -> str | None:
    line = " ".join(text.split())
    if not line:
        return None
    if len(line) <= TITLE_LENGTH:
        return line
    cut = line[:TITLE_LENGTH].rsplit(" ", 1)[0] or line[:TITLE_LENGTH]
    return cut.rstrip(",.;:") + "…"


def _memory_store(settings: Settings, workspace: Workspace) -> MemoryStore:
    from core.context import repository_root
    from core.memory import MemoryStore

    # One memory per repository, whichever of its directories a session was opened in.
    cwd = workspace.scope.cwd
    return MemoryStore(settings.memory_dir, repository_root(cwd) or cwd)


def _default_registry(memory: MemoryStore) -> ToolRegistry:
    from core.tools import default_tools
    from core.tools.memory import MemoryTool

    return ToolRegistry([*default_tools(), MemoryTool(memory)])
