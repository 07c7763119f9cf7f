"""The Agent: one conversation and what it is built of.

Its conversation (core/loop/conversation.py: history, title, what it spent), the services a
turn uses (`TurnServices`: the tool runner, the model, compression), the inbox through
which a running turn hears from outside (core/loop/inbox.py), and the workspace, tools,
approvals, model and memory they are built of. A turn (core/loop/turn.py) runs on them, one at
a time; subagents (core/tools/delegate.py) are agents of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from hermes_core.config import Settings
from hermes_core.events import Event, HistoryReplaced, PlanEntry, Status, UsageUpdated
from hermes_core.loop.budget import IterationBudget
from hermes_core.loop.conversation import Conversation
from hermes_core.loop.inbox import TurnInbox
from hermes_core.loop.model_link import ModelLink
from hermes_core.loop.tool_runner import ToolRunner
from hermes_core.loop.turn import ModelTurn, RequestShape, TurnServices
from hermes_core.messages import ContentPart, Message
from hermes_core.models import Usage
from hermes_core.policy.approval import ApprovalMemory, ApprovalPolicy, Approver, Mode
from hermes_core.prompt.recall import MemoryRecall, repository_memory
from hermes_core.providers.base import Provider, ToolSpec
from hermes_core.tools.base import SessionToolState, Tool, ToolLimits
from hermes_core.tools.builtin import default_tools
from hermes_core.tools.clarify import ClarifyTool
from hermes_core.tools.delegate import DelegateTool
from hermes_core.tools.memory import MemoryTool
from hermes_core.tools.registry import ToolRegistry
from hermes_core.workspace import Workspace

if TYPE_CHECKING:
    from hermes_core.changes.watch import WorkspaceWatcher
    from hermes_core.loop.turn_context import HistoryEstimate
    from hermes_core.policy.hooks import Hooks
    from hermes_core.policy.permission_rules import PermissionRules
    from hermes_core.rewind.checkpoints import Checkpoints
    from hermes_core.tools.clarify import Asker
    from hermes_core.tools.delegate import ChildReport, ChildSink

log = logging.getLogger(__name__)


class Agent:
    """One conversation with what it is built of: workspace, tools, approvals, model,
    memory. One turn at a time; what reaches a running turn comes through `inbox`."""

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
        self.memory = repository_memory(settings.memory_dir, workspace.scope.cwd)
        self.conversation = Conversation(list(messages or []), title=title)
        self.inbox = TurnInbox()
        # The built-in tools and memory unless a registry is given; then the embedder's own
        # (past-session search, MCP servers). Fixed for the session: prompt caches key on it.
        self.tools = tools if tools is not None else ToolRegistry([*default_tools(), MemoryTool(self.memory)])
        for tool in extra_tools:
            self.tools.register(tool)
        if tools is None:
            self.tools.register(ClarifyTool(self.inbox, lambda: self._asker))
            if delegation and settings.max_subagents > 0:
                self.tools.register(DelegateTool(self))
        self.approvals = approvals if approvals is not None else ApprovalMemory()
        self.policy = ApprovalPolicy(mode or Mode(settings.default_mode), self.approvals)
        self._estimate: HistoryEstimate | None = None  # the context's size, counted as it grows
        self.tool_state = tool_state if tool_state is not None else SessionToolState()
        self.link = ModelLink(settings, model or settings.model, providers)
        self.runner = ToolRunner(
            tools=self.tools,
            policy=self.policy,
            approver=approver,
            workspace=workspace,
            state=self.tool_state,
            limits=ToolLimits(command_timeout=settings.command_timeout_seconds),
            accepts_images=self.link.accepts_images,
        )
        self.watcher = watcher  # files the user changed between turns, for the next message
        self._effort: str | None = settings.reasoning_effort
        self._auto_compact = settings.auto_compact
        self.system_prompt = system_prompt if system_prompt is not None else self._build_system_prompt()
        self._recall = MemoryRecall(self.memory, self.system_prompt)
        self._tool_specs: dict[bool, list[ToolSpec]] = {}  # fixed for the session: caches key on it
        self._budget: IterationBudget | None = None  # the running turn's, shared with its subagents
        self._child_sink: ChildSink | None = None  # stores a finished subagent's transcript
        self._asker: Asker | None = None  # puts the clarify tool's questions to the user
        self.checkpoints: Checkpoints | None = None  # snapshots for /rewind, when the embedder keeps them
        self.hooks: Hooks | None = None  # command hooks around turns and tool calls (core/policy/hooks.py)
        self.services = TurnServices(
            system_prompt=self.system_prompt,
            runner=self.runner,
            jobs=self.tool_state.jobs,
            watcher=watcher,
            opening=self.start_turn,
            stream=self.link.stream,
            record_usage=self.record_usage,
            compress=lambda force: self.maybe_compress(force=force),
            usage_event=self.usage_event,
            shape=self._request_shape,
        )

    def connect(
        self,
        *,
        rules: PermissionRules | None = None,
        checkpoints: Checkpoints | None = None,
        hooks: Hooks | None = None,
        child_sink: ChildSink | None = None,
        asker: Asker | None = None,
    ) -> None:
        """What the embedder plugs in once the session exists: permission rules, /rewind's
        snapshots, command hooks, where subagents' transcripts go, who asks the user."""
        if rules is not None:
            self.policy.use_rules(rules)
        if checkpoints is not None:
            self.checkpoints = checkpoints
            self.runner.before_write = checkpoints.before_write
        if hooks is not None:
            self.hooks = hooks
            self.runner.hooks = hooks
        if child_sink is not None:
            self._child_sink = child_sink
        if asker is not None:
            self._asker = asker

    def restore(self, usage: Usage, cost_usd: float | None, plan: tuple[PlanEntry, ...]) -> None:
        """What a stored session had spent and planned, on loading it."""
        self.conversation.restore(usage, cost_usd)
        self.tool_state.plan = plan
        self.conversation.measured(self.estimate_context())

    def replace_history(self, messages: list[Message]) -> None:
        """A history cut or cleared by the user (/rewind, /clear)."""
        self.conversation.replace(messages, 0)
        self.conversation.measured(self.estimate_context() if messages else 0)

    # -- settable state -------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        return self.conversation.messages

    @property
    def mode(self) -> Mode:
        return self.policy.mode

    def switch_mode(self, mode: Mode) -> None:
        self.policy.switch(Mode(mode))

    @property
    def model(self) -> str:
        return self.link.name

    def switch_model(self, model: str) -> None:
        """The next model call goes to `model`; the old providers close at the next turn."""
        self.link.switch(model)

    async def close_retired(self) -> None:
        await self.link.close_retired()

    @property
    def context_window(self) -> int:
        return self.link.context_window

    @property
    def reasoning_effort(self) -> str | None:
        return self._effort

    def set_effort(self, effort: str | None) -> None:
        self._effort = effort

    @property
    def auto_compact(self) -> bool:
        return self._auto_compact

    def set_auto_compact(self, on: bool) -> None:
        self._auto_compact = on

    # -- what a turn reads ---------------------------------------------------------

    async def start_turn(self) -> str | None:
        """Ready for a turn; what changed outside the conversation since the last one: files
        the user edited, and memory saved since the system prompt was fixed (by another
        session, or by hand) that the model has not seen yet."""
        from hermes_core.loop.turn_context import turn_preamble

        await self.link.close_retired()  # a switch made outside the ACP server (library use)
        self.link.new_turn()

        changed: list[str] = []
        if self.watcher is not None:
            await self.watcher.start()  # idempotent; the first turn pays the directory walk
            changed = self.watcher.drain()
        # Read in a thread only when a stat says the memory files changed since the last read.
        recalled = (
            None if self._recall.unchanged() else await asyncio.to_thread(self._recall.fresh, self.messages)
        )
        return turn_preamble(changed, recalled)

    def steer(self, text: str) -> None:
        """Add the user's text to the running turn: the model reads it at its next call (one
        more call if it was about to finish; a steer that lands after the turn's last call
        opens the next turn)."""
        self.inbox.steer(text)

    def run_turn(
        self,
        content: str | list[ContentPart],
        *,
        preamble: str | None = None,
        budget: IterationBudget | None = None,
    ) -> AsyncIterator[Event]:
        """Yield the turn's events (see `ModelTurn.run`). `budget`: a subagent's share of its
        parent's turn (a turn of its own has `max_iterations` calls)."""
        if self.hooks is not None and self.hooks.specs and budget is None:
            events = self.hooks.around_turn(self._one_turn, content, preamble)
        else:
            events = self._one_turn(content, preamble, budget)
        if self.checkpoints is not None and budget is None:
            return self.checkpoints.wrap(events, content)
        return events

    def _one_turn(
        self, content: str | list[ContentPart], preamble: str | None, budget: IterationBudget | None = None
    ) -> AsyncIterator[Event]:
        self._budget = budget or IterationBudget(self.settings.max_iterations)  # subagents share it
        return ModelTurn(self.conversation, self.services, self.inbox, self._budget).run(content, preamble)

    def tool_specs(self, *, read_only: bool = False) -> list[ToolSpec]:
        """The tool list sent to the model (read-only tools in plan mode); built once."""
        if read_only not in self._tool_specs:
            self._tool_specs[read_only] = self.tools.specs(read_only=read_only)
        return self._tool_specs[read_only]

    def _request_shape(self) -> RequestShape:
        return RequestShape(
            tools=self.tool_specs(read_only=self.mode is Mode.PLAN),
            max_output_tokens=self.settings.max_output_tokens,
            reasoning_effort=self.reasoning_effort,
        )

    # -- subagents (core/tools/delegate.py) -------------------------------------------

    def running_budget(self) -> IterationBudget | None:
        return self._budget

    def spawn_child(self, tool_names: Sequence[str], approver: Approver) -> Agent:
        """A child for delegate_task: this agent's workspace, mode, model, "always" answers
        and provider clients; its own conversation, tool state and the named tools only."""
        names = set(tool_names)
        child = Agent(
            settings=self.settings,
            workspace=self.workspace,
            approver=approver,
            model=self.link.name,
            providers=self.link.providers,  # shared; the parent closes them
            tools=ToolRegistry([tool for tool in self.tools if tool.name in names]),
            mode=self.mode,
            approvals=self.approvals,
            title="subagent",
            delegation=False,
        )
        # The parent's policy itself, not a copy of its mode: its permission rules (a
        # deny held for the model's own calls and not one `delegate_task` away) and a mode
        # the user switches to mid-turn. And its hooks: a `pre_tool` guard guards both.
        child.policy = child.runner.policy = self.policy
        if self.hooks is not None:
            child.hooks = child.runner.hooks = self.hooks
        child.set_effort(self._effort)
        return child

    def absorb(self, usage: Usage, cost_usd: float | None) -> None:
        """A subagent's usage and cost count as this session's, and show in the running turn."""
        self.conversation.absorb(usage, cost_usd)
        self.inbox.add_child_usage(usage)

    async def report_child(self, report: ChildReport) -> None:
        if self._child_sink is None:
            return
        try:
            await self._child_sink(report)
        except Exception:  # a transcript that cannot be stored must not fail the parent's turn
            log.warning("a subagent's transcript could not be stored", exc_info=True)

    # -- context ---------------------------------------------------------------------

    def _build_system_prompt(self) -> str:
        from hermes_core.prompt.context import build_system_prompt

        return build_system_prompt(
            cwd=self.workspace.scope.cwd,
            extra_roots=list(self.workspace.scope.extra_roots),
            tool_names=self.tools.names(),
            memory=self.memory,
            skills=list(getattr(self.tools.get("skill"), "skills", {}).values()),
        )

    def estimate_context(self) -> int:
        if self._estimate is None:
            from hermes_core.loop.turn_context import HistoryEstimate

            self._estimate = HistoryEstimate()
        return self._estimate.of(self.system_prompt, self.messages, self.tool_specs())

    async def maybe_compress(self, *, force: bool = False) -> AsyncIterator[Event]:
        """Compress the conversation when it nears the context window (or now, if forced):
        its middle is replaced by a summary (core/loop/compression.py)."""
        from hermes_core.loop.turn_context import should_compress

        conversation = self.conversation
        conversation.measured(self.estimate_context())
        settings = self.settings
        window, threshold = self.context_window, settings.compression_threshold
        before = conversation.context_tokens
        if not (force or (self._auto_compact and should_compress(before, window, threshold))):
            return
        from hermes_core.loop.compression import compress, plan_compression

        keep_last = settings.compression_keep_last
        plan = plan_compression(conversation.messages, keep_last=keep_last)
        if plan is None:
            return
        yield Status("compressing", f"Compressing the conversation ({before:,} of {window:,} tokens).")
        messages = await compress(conversation.messages, self._summarise, keep_last=keep_last)
        conversation.replace(messages, before)
        conversation.measured(self.estimate_context())
        after = conversation.context_tokens
        yield HistoryReplaced(tuple(messages))
        yield Status(
            "compressed",
            f"Compressed the conversation from {before:,} to {after:,} tokens.",
            {"before": before, "after": after, "messages": len(plan.middle)},
        )
        yield self.usage_event(Usage())

    async def _summarise(self, system: str, messages: list[Message]) -> str:
        from hermes_core.loop.compression import summarise

        own = None if self.settings.auxiliary_model else self.link.providers
        response = await summarise(self.settings, own or [], system, messages)
        self.record_usage(response.usage)
        return response.text.strip()

    def compact(self) -> AsyncIterator[Event]:
        """Force a compression now (/compact)."""
        return self.maybe_compress(force=True)

    def usage_event(self, turn_usage: Usage) -> UsageUpdated:
        conversation = self.conversation
        return UsageUpdated(
            turn=turn_usage,
            total=conversation.usage,
            context_tokens=conversation.context_tokens,
            context_window=self.context_window,
            cost_usd=conversation.cost_usd,
        )

    def record_usage(self, usage: Usage) -> None:
        self.conversation.spend(usage, self.link.cost(usage))

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
        await self.link.aclose()
