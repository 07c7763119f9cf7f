"""Agent.run_turn(): the loop.

One turn: the user's message in, a stream of typed events out, until the model
answers without tool calls, the iteration budget is spent, or the consuming task
is cancelled. Tools of one response run concurrently where that is safe; results
go back to the model in the model's order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.approval import ApprovalMemory, ApprovalPolicy, Approver, Decision, Mode
from core.budget import IterationBudget
from core.config import Settings
from core.events import (
    Event,
    HistoryReplaced,
    MessageCommitted,
    Status,
    StepFinished,
    StopReason,
    TextDelta,
    TitleChanged,
    TurnEnded,
    Usage,
    UsageUpdated,
)
from core.memory import MemoryStore
from core.messages import ContentPart, Message, TextPart, ToolCall, repair_alternation
from core.providers.base import ErrorKind, ModelRequest, ModelResponse, Provider, ProviderError
from core.tool_runner import ToolRunner, TurnCancelled, call_cards
from core.tools.base import SessionToolState, Tool, ToolLimits
from core.tools.registry import ToolRegistry
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.tools.clarify import Asker
    from core.tools.delegate import ChildReport, ChildSink
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

TurnResult = TurnEnded  # the last event of a turn is its result


class Agent:
    """One conversation: history, workspace, tools, approvals, model. One turn at a time."""

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Workspace,
        approver: Approver,
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
        self._model = settings.model
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
        self.budget: IterationBudget | None = None  # the running turn's, shared with its subagents
        self.child_sink: ChildSink | None = None  # stores a finished subagent's transcript
        self.asker: Asker | None = None  # puts the clarify tool's questions to the user
        self._final_message: str | None = None  # a tool ended the turn with this text
        self._child_usage = Usage()  # subagents' usage not yet counted in the turn's
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
        from core.turn_context import turn_preamble

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

    # -- subagents ---------------------------------------------------------------------

    def subagent(self, tool_names: Sequence[str], approver: Approver) -> Agent:
        """A child for delegate_task: this workspace, mode, model, "always" answers and
        provider clients; its own conversation, tool state and the named tools only."""
        tools = ToolRegistry([tool for tool in self.tools if tool.name in set(tool_names)])
        child = Agent(
            settings=self.settings,
            workspace=self.workspace,
            approver=approver,
            providers=self.providers,
            tools=tools,
            mode=self.mode,
            approvals=self.approvals,
            title="subagent",
            delegation=False,
        )
        child._model = self._model  # not the setter: it would retire (close) the shared clients
        child._providers = self.providers  # shared; the parent closes them
        child.reasoning_effort = self.reasoning_effort
        return child

    def child_budget(self) -> IterationBudget:
        assert self.budget is not None, "subagents run inside a turn"
        return self.budget.child(self.settings.subagent_max_iterations)

    def absorb_child(self, child: Agent) -> None:
        """A subagent's usage and cost count as this session's."""
        self.usage_total += child.usage_total
        self._child_usage += child.usage_total
        if child.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + child.cost_usd

    def _take_child_usage(self) -> Usage | None:
        usage, self._child_usage = self._child_usage, Usage()
        return usage if usage != Usage() else None

    async def report_child(self, report: ChildReport) -> None:
        if self.child_sink is None:
            return
        try:
            await self.child_sink(report)
        except Exception:  # a transcript that cannot be stored must not fail the parent's turn
            log.warning("a subagent's transcript could not be stored", exc_info=True)

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
        self.budget = budget or IterationBudget(self.settings.max_iterations)
        await self.close_retired()  # a switch made outside the ACP server (library use)
        context = await self._turn_context()
        preamble = "\n\n".join(p for p in (context, preamble) if p) or None
        turn_start = len(self.messages)
        turn_usage = Usage()
        if self._resilient is not None:
            self._resilient.reset()  # a fallback carries a turn to its end, not the next one
        text_parts: list[str] = []
        user_message = Message(role="user", content=_with_preamble(content, preamble))
        self.messages.append(user_message)
        yield MessageCommitted(user_message)
        if self.title is None:
            self.title = _title_from(user_message.text if preamble is None else _plain(content))
            if self.title:
                yield TitleChanged(self.title)

        repairs = 0
        iteration = 0
        budget = self.budget
        stop = StopReason.END_TURN
        partial: list[str] = []  # the text streamed by the model call in flight
        self.interrupted = None
        self._final_message = None
        try:
            if self.watcher is not None:
                self.watcher.turn_started()  # from here on, changes are the agent's own work
            while True:
                if not budget.take():
                    async for event in self._grace_call(text_parts):
                        if isinstance(event, Usage):
                            turn_usage += event
                            continue
                        yield event
                    stop = StopReason.MAX_TURN_REQUESTS
                    break
                iteration += 1
                steered = self._steer_message()
                if steered is not None:
                    self.messages.append(steered)
                    yield MessageCommitted(steered)
                async for event in self._maybe_compress():
                    yield event
                response: ModelResponse | None = None
                partial.clear()
                async for item in self._call_with_continuations():
                    if isinstance(item, ModelResponse):
                        response = item
                    elif isinstance(item, Usage):
                        turn_usage += item
                    else:
                        if isinstance(item, TextDelta):
                            partial.append(item.text)
                        yield item
                assert response is not None
                partial.clear()
                yield self._usage_event(turn_usage)
                assistant = self._assistant_message(response)
                calls = self.runner.prepare(assistant.tool_calls)
                if calls:
                    assistant.display = call_cards(calls)
                self.messages.append(assistant)
                yield MessageCommitted(assistant)
                yield StepFinished(iteration, response.finish_reason)
                if response.text:
                    text_parts.append(response.text)

                if not assistant.tool_calls:
                    if self._steers:
                        continue  # the user added something the model has not read yet
                    stop = self._stop_reason(response)
                    if stop is StopReason.MAX_TOKENS and not response.text and response.reasoning:
                        yield Status(
                            "notice",
                            "The model spent its whole output budget thinking and gave no answer. "
                            "Raise max_output_tokens or lower the reasoning effort.",
                        )
                    break

                bad = sum(1 for c in calls if c.error and c.tool is not None)
                repairs += bad
                if repairs > MAX_ARGUMENT_REPAIRS:
                    for c in calls:
                        if c.error and c.tool is not None:
                            c.error += " The argument-repair budget for this turn is spent; the turn ends."
                async for event in self.runner.run(calls):
                    if isinstance(event, MessageCommitted):
                        self.messages.append(event.message)
                    yield event
                children = self._take_child_usage()
                if children is not None:  # subagents ran: their spending shows now
                    turn_usage += children
                    yield self._usage_event(turn_usage)
                closing = self._closing_message()
                if closing is not None:  # a question the editor cannot show: it ends the turn
                    yield TextDelta(closing.text)
                    self.messages.append(closing)
                    yield MessageCommitted(closing)
                    text_parts.append(closing.text)
                    break
                if repairs > MAX_ARGUMENT_REPAIRS:
                    yield Status("notice", "The model kept sending invalid tool arguments; the turn ended.")
                    break
        except TurnCancelled:
            stop = StopReason.CANCELLED
        except asyncio.CancelledError:
            self._keep_interrupted("".join(partial))
            raise
        finally:
            if self.watcher is not None:
                self.watcher.turn_finished()
        yield TurnEnded(stop, turn_usage, tuple(self.messages[turn_start:]), "".join(text_parts))

    async def _call_with_continuations(self) -> AsyncIterator[Any]:
        """One model call; when the output limit cut visible text, ask it to go on and join.

        Yields deltas and statuses, each call's Usage, and last the joined ModelResponse.
        """
        joined: ModelResponse | None = None
        extra: list[Message] = []
        continuations = 0
        overflow_retried = False
        while True:
            response: ModelResponse | None = None
            streamed_text = False
            try:
                async with contextlib.aclosing(self._model_stream(self._request(extra))) as stream:
                    async for item in stream:
                        if isinstance(item, ModelResponse):
                            response = item
                        else:
                            streamed_text = streamed_text or isinstance(item, TextDelta)
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
            yield response.usage
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
        yield joined

    async def _grace_call(self, text_parts: list[str]) -> AsyncIterator[Any]:
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
        yield response.usage
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
            text_parts.append(response.text)

    def _request(self, extra: list[Message], *, grace: bool = False) -> ModelRequest:
        read_only = self.mode is Mode.PLAN
        return ModelRequest(
            system=self.system_prompt,
            messages=repair_alternation(self.messages) + extra,
            tools=self.tools.specs(read_only=read_only),
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

    def _estimate_context(self) -> int:
        from core.turn_context import estimate_messages_tokens

        return estimate_messages_tokens(self.system_prompt, self.messages, self.tools.specs())

    async def _maybe_compress(self, *, force: bool = False) -> AsyncIterator[Event]:
        from core.compression import apply_compression, plan_compression, summary_request
        from core.turn_context import should_compress

        self.context_tokens = self._estimate_context()
        window = self.context_window
        threshold = self.settings.compression_threshold
        if not force and not (
            self.settings.auto_compact and should_compress(self.context_tokens, window, threshold)
        ):
            return
        plan = plan_compression(self.messages, keep_last=self.settings.compression_keep_last)
        if plan is None:
            return
        before = self.context_tokens
        yield Status("compressing", f"Compressing the conversation ({before:,} of {window:,} tokens).")
        system, summary_messages = summary_request(plan.middle)
        summary = await self._summarise(system, summary_messages)
        self.messages = apply_compression(plan, summary)
        self.context_tokens = self._estimate_context()
        yield HistoryReplaced(tuple(self.messages))
        yield Status(
            "compressed",
            f"Compressed the conversation from {before:,} to {self.context_tokens:,} tokens.",
            {"before": before, "after": self.context_tokens},
        )
        yield self._usage_event(Usage())

    async def _summarise(self, system: str, messages: list[Message]) -> str:
        from core.providers.resilient import ResilientModel

        own_chain = bool(self.settings.auxiliary_model)
        if own_chain:
            from core.providers.resolve import build_chain

            providers = build_chain(self.settings, self.settings.auxiliary_model)
        else:
            providers = self.providers
        model = ResilientModel(
            providers,
            max_retries=self.settings.max_retries,
            base_delay=self.settings.retry_base_seconds,
            cap_delay=self.settings.retry_cap_seconds,
        )
        response: ModelResponse | None = None
        try:
            request = ModelRequest(system=system, messages=messages)
            async with contextlib.aclosing(model.stream(request)) as stream:
                async for item in stream:
                    if isinstance(item, ModelResponse):
                        response = item
        finally:
            if own_chain:
                await model.aclose()
        if response is None or not response.text.strip():
            raise ProviderError(ErrorKind.FATAL, "the summariser returned no text")
        self.record_usage(response.usage)
        return response.text.strip()

    async def compact(self) -> AsyncIterator[Event]:
        """Force a compression now (/compact)."""
        async for event in self._maybe_compress(force=True):
            yield event

    def _usage_event(self, turn_usage: Usage) -> UsageUpdated:
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


# -- library entry points ------------------------------------------------------------


async def run_turn(
    prompt: str | list[ContentPart],
    *,
    settings: Settings | None = None,
    cwd: str | Path = ".",
    approver: Approver | None = None,
    **agent_options: Any,
) -> AsyncIterator[Event]:
    """One turn with a fresh agent on a local workspace; yields events, ending with TurnEnded."""
    agent = _local_agent(settings, cwd, approver, **agent_options)
    try:
        async for event in agent.run_turn(prompt):
            yield event
    finally:
        await agent.aclose()


def chat(
    prompt: str,
    *,
    settings: Settings | None = None,
    cwd: str | Path = ".",
    approver: Approver | None = None,
    **agent_options: Any,
) -> str:
    """Blocking: run one turn and return the answer's text."""

    async def main() -> str:
        async for event in run_turn(prompt, settings=settings, cwd=cwd, approver=approver, **agent_options):
            if isinstance(event, TurnEnded):
                return event.text
        return ""

    return asyncio.run(main())


def _local_agent(
    settings: Settings | None, cwd: str | Path, approver: Approver | None, **agent_options: Any
) -> Agent:
    from core.config import load_settings
    from core.sandbox.bwrap import Sandbox
    from core.workspace import LocalWorkspace, WorkspaceScope

    settings = settings or load_settings()
    scope = WorkspaceScope(Path(cwd).resolve())
    workspace = LocalWorkspace(scope, sandbox=Sandbox.from_settings(settings, scope))
    return Agent(
        settings=settings,
        workspace=workspace,
        approver=approver or StaticApprover(Decision.REJECT_ONCE),
        **agent_options,
    )


class StaticApprover:
    """Answers every approval request the same way (library use, scripts, tests)."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    async def decide(self, request: Any) -> Decision:
        return self.decision
