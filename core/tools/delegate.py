"""delegate_task: hand self-contained tasks to child agents that run in parallel.

Each child has its own conversation, the goal as its first message, the parent's tools
minus delegation (and minus the tools that talk to the user or keep the session's plan),
and a share of the turn's model-call budget. The parent's editor sees one card per child
with its steps as they happen; the child's final answer is what the model reads.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from pydantic import Field

from hermes_core.events import (
    Event,
    StopReason,
    ToolCallFinished,
    ToolCallNote,
    ToolCallStarted,
    ToolKind,
    TurnEnded,
)
from hermes_core.models import Usage
from hermes_core.policy.approval import ApprovalRequest, Approver, Decision
from hermes_core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace

if TYPE_CHECKING:
    from hermes_core.config import Settings
    from hermes_core.loop.budget import IterationBudget
    from hermes_core.loop.conversation import Conversation
    from hermes_core.messages import Message
    from hermes_core.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

NOT_FOR_CHILDREN = frozenset({"delegate_task", "clarify", "todo"})
GOAL_LENGTH = 60


class SubTask(ToolArgs):
    goal: str = Field(
        description="What the subagent must find out or do; self-contained: it sees nothing else."
    )
    context: str = Field(default="", description="Facts the subagent needs that are not in the files.")
    files: list[str] = Field(default_factory=list, description="Paths worth reading first.")
    tools: list[str] | None = Field(
        default=None, description="Tool names the subagent may use; all but delegation when omitted."
    )


class DelegateArgs(ToolArgs):
    tasks: list[SubTask] = Field(min_length=1, description="One task per subagent; they run in parallel.")


@dataclass(frozen=True, slots=True)
class ChildReport:
    """A finished child, for the embedder to store as a child session."""

    child_id: str
    parent_call_id: str
    goal: str
    messages: tuple[Message, ...]
    usage: Usage
    cost_usd: float | None
    stop_reason: StopReason


ChildSink = Callable[[ChildReport], Awaitable[None]]


class Child(Protocol):
    """A subagent, as its parent runs it (`agent.Agent`)."""

    @property
    def conversation(self) -> Conversation: ...

    def run_turn(self, content: str, *, budget: IterationBudget) -> AsyncIterator[Event]: ...

    async def release_processes(self) -> None: ...


class Parent(Protocol):
    """What delegation needs of the agent whose turn delegates (`agent.Agent`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def approver(self) -> Approver: ...

    def running_budget(self) -> IterationBudget | None: ...

    def spawn_child(self, tool_names: Sequence[str], approver: Approver) -> Child: ...

    def absorb(self, usage: Usage, cost_usd: float | None) -> None: ...

    async def report_child(self, report: ChildReport) -> None: ...


class DelegateTool(Tool[DelegateArgs]):
    """Hand one or more self-contained tasks to subagents that work in parallel, each with its own
    fresh context (they do not see this conversation), and get their final answers back. Use it
    for independent research or changes that would fill this context: give each a precise goal,
    the facts it needs, and the files to start from."""

    name = "delegate_task"
    kind: ToolKind = "think"
    read_only = False  # children may edit; plan mode leaves delegation out
    interactive = True  # children of two calls would race for the same files

    def __init__(self, parent: Parent) -> None:
        self._parent = parent

    def title(self, args: DelegateArgs, workspace: Workspace) -> str:
        if len(args.tasks) == 1:
            return f"Subagent: {_short(args.tasks[0].goal)}"
        return f"{len(args.tasks)} subagents in parallel"

    async def run(self, args: DelegateArgs, ctx: ToolContext) -> ToolResult:
        limit = self._parent.settings.max_subagents
        if len(args.tasks) > limit:
            return ToolResult.error(
                f"At most {limit} subagents at once; you asked for {len(args.tasks)}. Merge tasks."
            )
        unknown = {
            name for task in args.tasks for name in task.tools or [] if name not in self._child_tools()
        }
        if unknown:
            offered = ", ".join(sorted(self._child_tools()))
            return ToolResult.error(
                f"Subagents cannot use {', '.join(sorted(unknown))}; they can use {offered}."
            )
        runs = [self._run_child(number, task, ctx) for number, task in enumerate(args.tasks, 1)]
        answers = await asyncio.gather(*runs)
        if len(answers) == 1:
            return ToolResult(text=answers[0][1], ok=answers[0][0])
        parts = [
            f"## Subagent {n}: {task.goal}\n\n{answer}"
            for n, (task, (_, answer)) in enumerate(zip(args.tasks, answers, strict=True), 1)
        ]
        return ToolResult(text="\n\n".join(parts), ok=any(ok for ok, _ in answers))

    def _child_tools(self) -> set[str]:
        return {name for name in self._parent.tools.names() if name not in NOT_FOR_CHILDREN}

    async def _run_child(self, number: int, task: SubTask, ctx: ToolContext) -> tuple[bool, str]:
        """(finished normally, the answer the parent model reads)."""
        parent = self._parent
        card = f"{ctx.call_id}.{number}"
        label = f"Subagent {number}"
        ctx.emit(
            ToolCallStarted(card, "subagent", f"{label}: {_short(task.goal)}", "think", task.model_dump())
        )
        # In a thread: building a child reads the context files for its system prompt.
        tools = task.tools or sorted(self._child_tools())
        child = await asyncio.to_thread(parent.spawn_child, tools, NamedApprover(parent.approver, label))
        progress = _Progress(card, ctx)
        ended: TurnEnded | None = None
        running = parent.running_budget()
        assert running is not None, "subagents run inside a turn"
        budget = running.child(parent.settings.subagent_max_iterations)
        try:
            async for event in child.run_turn(_first_message(task), budget=budget):
                if isinstance(event, ToolCallStarted):
                    progress.step(event.title)
                elif isinstance(event, ToolCallFinished) and event.status == "failed":
                    progress.failed()
                elif isinstance(event, TurnEnded):
                    ended = event
        finally:
            spent = child.conversation
            parent.absorb(spent.usage, spent.cost_usd)
            await child.release_processes()
            await parent.report_child(
                ChildReport(
                    child_id=f"{parent.session_id or 'agent'}-sub-{secrets.token_hex(4)}",
                    parent_call_id=ctx.call_id,
                    goal=task.goal,
                    messages=tuple(spent.messages),
                    usage=spent.usage,
                    cost_usd=spent.cost_usd,
                    stop_reason=ended.stop_reason if ended else StopReason.CANCELLED,
                )
            )
        assert ended is not None
        answer = _answer(child.conversation.messages) or "(The subagent gave no answer.)"
        ok = ended.stop_reason is not StopReason.CANCELLED
        if not ok:
            answer = f"The user cancelled this subagent. What it had said:\n{answer}"
        elif ended.stop_reason is StopReason.MAX_TURN_REQUESTS:
            answer = f"(The subagent ran out of model calls.)\n{answer}"
        progress.answer(answer)
        ctx.emit(ToolCallFinished(card, "completed" if ok else "failed", answer))
        return ok, answer


class _Progress:
    """The child's card text: one line per step, then its answer."""

    def __init__(self, card: str, ctx: ToolContext) -> None:
        self._card = card
        self._ctx = ctx
        self._lines: list[str] = []

    def step(self, title: str) -> None:
        self._lines.append(f"- {title}")
        self._send()

    def failed(self) -> None:
        if self._lines:
            self._lines[-1] += " (failed)"
            self._send()

    def answer(self, text: str) -> None:
        self._lines += ["", text]
        self._send()

    def _send(self) -> None:
        self._ctx.emit(ToolCallNote(self._card, "\n".join(self._lines)))


class NamedApprover:
    """The parent's approver, with the child named in what the user is asked."""

    def __init__(self, inner: Approver, name: str) -> None:
        self._inner = inner
        self._name = name

    async def decide(self, request: ApprovalRequest) -> Decision:
        return await self._inner.decide(replace(request, title=f"{self._name}: {request.title}"))


def _first_message(task: SubTask) -> str:
    parts = [f"Your task: {task.goal}"]
    if task.context:
        parts.append(f"Context:\n{task.context}")
    if task.files:
        parts.append("Files to start from:\n" + "\n".join(f"- {path}" for path in task.files))
    parts.append(
        "You are a subagent: nobody reads your work but the agent that gave you this task. "
        "When done, answer with everything it needs to know, complete and self-contained."
    )
    return "\n\n".join(parts)


def _answer(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.role == "assistant" and message.text.strip():
            return message.text.strip()
    return ""


def _short(goal: str) -> str:
    line = " ".join(goal.split())
    return line if len(line) <= GOAL_LENGTH else line[: GOAL_LENGTH - 1] + "…"
