"""The Agent: one conversation and what it is built of.

History, workspace, tools, approvals, model, memory and what the session spent. A turn
(core/turn.py) runs on it, one at a time; compression (core/compression.py) rewrites its
history; subagents (core/tools/delegate.py) are agents of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.approval import ApprovalMemory, ApprovalPolicy, Approver, Mode
from hermes_core.config import Settings
from hermes_core.events import Event, UsageUpdated
from hermes_core.memory import MemoryStore
from hermes_core.messages import ContentPart, Message, RepairedHistory
from hermes_core.models import Usage
from hermes_core.providers.base import ModelRequest, Provider, ToolSpec
from hermes_core.tool_runner import ToolRunner
from hermes_core.tools.base import SessionToolState, Tool, ToolLimits
from hermes_core.tools.registry import ToolRegistry
from hermes_core.turn import IterationBudget, Turn
from hermes_core.workspace import Workspace

if TYPE_CHECKING:
    from hermes_core.checkpoints import Checkpoints
    from hermes_core.hooks import Hooks
    from hermes_core.providers.resilient import ResilientItem
    from hermes_core.tools.clarify import Asker
    from hermes_core.tools.delegate import ChildSink
    from hermes_core.turn_context import HistoryEstimate
    from hermes_core.watch import WorkspaceWatcher

log = logging.getLogger(__name__)

STEER_PREFIX = "(The user added this while you were working; take it into account:)"


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
            from hermes_core.tools.clarify import ClarifyTool

            self.tools.register(ClarifyTool(self))
            if delegation and settings.max_subagents > 0:
                from hermes_core.tools.delegate import DelegateTool

                self.tools.register(DelegateTool(self))
        self.approvals = approvals if approvals is not None else ApprovalMemory()
        self.policy = ApprovalPolicy(mode or Mode(settings.default_mode), self.approvals)
        self.messages: list[Message] = list(messages or [])
        # The history as requests send it, repaired incrementally (a turn adds to it).
        self.repaired = RepairedHistory()
        self._estimate: HistoryEstimate | None = None  # the context's size, counted as it grows
        self.tool_state = tool_state if tool_state is not None else SessionToolState()
        self.limits = ToolLimits(command_timeout=settings.command_timeout_seconds)
        self.runner = ToolRunner(
            tools=self.tools,
            policy=self.policy,
            approver=approver,
            workspace=workspace,
            state=self.tool_state,
            limits=self.limits,
            accepts_images=self._accepts_images,
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
        self.used_call_ids: set[str] = {c.id for m in self.messages for c in m.tool_calls}
        self._known_facts: set[str] | None = None  # memory the model has seen; filled lazily
        self.steers: list[str] = []  # the user's additions to the running turn (/steer)
        self._tool_specs: dict[bool, list[ToolSpec]] = {}  # fixed for the session: caches key on it
        self.budget: IterationBudget | None = None  # the running turn's, shared with its subagents
        self.child_sink: ChildSink | None = None  # stores a finished subagent's transcript
        self.asker: Asker | None = None  # puts the clarify tool's questions to the user
        self._final_message: str | None = None  # a tool ended the turn with this text
        self.child_usage = Usage()  # subagents' usage not yet counted in the turn's
        # What a cancelled turn had shown when it stopped; the embedder stores it.
        self.interrupted: Message | None = None
        self.checkpoints: Checkpoints | None = None  # snapshots for /rewind, when the embedder keeps them
        self.hooks: Hooks | None = None  # command hooks around turns and tool calls (core/hooks.py)

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
        from hermes_core.models import context_window

        return context_window(self._model, self.settings.context_windows)

    @property
    def providers(self) -> list[Provider]:
        if self._providers is None:
            from hermes_core.providers.resolve import build_chain

            self._providers = build_chain(self.settings, self._model)
        return self._providers

    def model_stream(self, request: ModelRequest) -> AsyncGenerator[ResilientItem, None]:
        if self._resilient is None:
            from hermes_core.providers.resilient import ResilientModel

            self._resilient = ResilientModel(
                self.providers,
                max_retries=self.settings.max_retries,
                base_delay=self.settings.retry_base_seconds,
                cap_delay=self.settings.retry_cap_seconds,
            )
        return self._resilient.stream(request)

    # -- what a turn reads ---------------------------------------------------------

    async def start_turn(self) -> str | None:
        """Ready for a turn; what changed outside the conversation since the last one: files
        the user edited, and memory saved since the system prompt was fixed (by another
        session, or by hand) that the model has not seen yet."""
        from hermes_core.turn_context import turn_preamble

        await self.close_retired()  # a switch made outside the ACP server (library use)
        if self._resilient is not None:
            self._resilient.reset()  # a fallback carries a turn to its end, not the next one
        self.interrupted = None
        self._final_message = None

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
        self.steers.append(text)

    def take_steer(self) -> Message | None:
        """What came in since the last model call: the user's steers, and one line per
        background job that ended."""
        ended = self.tool_state.jobs.take_lines() if self.tool_state.jobs.unreported else []
        if not self.steers and not ended:
            return None
        texts, self.steers = self.steers, []
        steered = [STEER_PREFIX, *texts] if texts else []
        # A new user message at the end: the cached prefix of the conversation stays as it was.
        # `display`: what the user wrote, for a replay (the jobs' ends are on their cards).
        return Message(role="user", content="\n\n".join([*ended, *steered]), display={"steers": texts})

    def take_child_usage(self) -> Usage | None:
        usage, self.child_usage = self.child_usage, Usage()
        return usage if usage != Usage() else None

    def end_turn_with(self, text: str) -> None:
        """A tool asks that the turn end once its calls are done, with this as the answer."""
        self._final_message = text

    def take_closing(self) -> Message | None:
        text, self._final_message = self._final_message, None
        return Message(role="assistant", content=text) if text else None

    def run_turn(
        self,
        content: str | list[ContentPart],
        *,
        preamble: str | None = None,
        budget: IterationBudget | None = None,
    ) -> AsyncIterator[Event]:
        """Yield the turn's events (see `Turn.run`). `budget`: a subagent's share of its
        parent's turn (a turn of its own has `max_iterations` calls)."""
        if self.hooks is not None and self.hooks.specs and budget is None:
            events = self.hooks.around_turn(self, content, preamble)
        else:
            events = Turn(self, budget or IterationBudget(self.settings.max_iterations)).run(
                content, preamble
            )
        if self.checkpoints is not None and budget is None:
            return self.checkpoints.wrap(events, content)
        return events

    def tool_specs(self, *, read_only: bool = False) -> list[ToolSpec]:
        """The tool list sent to the model (read-only tools in plan mode); built once."""
        if read_only not in self._tool_specs:
            self._tool_specs[read_only] = self.tools.specs(read_only=read_only)
        return self._tool_specs[read_only]

    # -- context ---------------------------------------------------------------------

    def _build_system_prompt(self) -> str:
        from hermes_core.context import build_system_prompt

        return build_system_prompt(
            cwd=self.workspace.scope.cwd,
            extra_roots=list(self.workspace.scope.extra_roots),
            tool_names=self.tools.names(),
            memory=self.memory,
            skills=list(getattr(self.tools.get("skill"), "skills", {}).values()),
        )

    def _accepts_images(self) -> bool:
        from hermes_core.models import model_info

        return model_info(self._model).images

    def estimate_context(self) -> int:
        if self._estimate is None:
            from hermes_core.turn_context import HistoryEstimate

            self._estimate = HistoryEstimate()
        return self._estimate.of(self.system_prompt, self.messages, self.tool_specs())

    async def maybe_compress(self, *, force: bool = False) -> AsyncIterator[Event]:
        """Compress the conversation when it nears the context window (or now, if forced)."""
        from hermes_core.turn_context import should_compress

        self.context_tokens = self.estimate_context()
        settings = self.settings
        window, threshold = self.context_window, settings.compression_threshold
        if force or (settings.auto_compact and should_compress(self.context_tokens, window, threshold)):
            from hermes_core.compression import compress

            async for event in compress(self):
                yield event

    def compact(self) -> AsyncIterator[Event]:
        """Force a compression now (/compact)."""
        return self.maybe_compress(force=True)

    def usage_event(self, turn_usage: Usage) -> UsageUpdated:
        return UsageUpdated(
            turn=turn_usage,
            total=self.usage_total,
            context_tokens=self.context_tokens,
            context_window=self.context_window,
            cost_usd=self.cost_usd,
        )

    def record_usage(self, usage: Usage) -> None:
        from hermes_core.models import cost_usd, normalise

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
        await self.tool_state.jobs.aclose()
        await self.release_processes()
        await self.close_retired()
        for provider in self._providers or []:
            with contextlib.suppress(Exception):
                await provider.aclose()


def _message_words(message: Message) -> str:
    """The message's text and its tool calls' arguments (JSON, unescaped where it parses)."""
    parts = [message.text]
    for call in message.tool_calls:
        try:
            parts.append(str(json.loads(call.arguments)))
        except ValueError:
            parts.append(call.arguments)
    return "\n".join(parts)


def _memory_store(settings: Settings, workspace: Workspace) -> MemoryStore:
    from hermes_core.context import repository_root
    from hermes_core.memory import MemoryStore

    # One memory per repository, whichever of its directories a session was opened in.
    cwd = workspace.scope.cwd
    return MemoryStore(settings.memory_dir, repository_root(cwd) or cwd)


def _default_registry(memory: MemoryStore) -> ToolRegistry:
    from hermes_core.tools import default_tools
    from hermes_core.tools.memory import MemoryTool

    return ToolRegistry([*default_tools(), MemoryTool(memory)])
