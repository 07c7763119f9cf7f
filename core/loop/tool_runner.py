"""The tool calls of one model response: approve, run, report (read first by
core/loop/prepared_calls.py).

Reads and searches run concurrently (`MAX_PARALLEL_CALLS` at a time); edits join them
when the files they touch differ (compared after resolving: `a.py`, `./a.py`, `/abs/a.py`
and a symlink to it are one file); calls to the same file and interactive tools (commands)
keep the model's order (core/loop/tool_waves.py). Results go back in the model's order whatever order they
finished in.

Whatever goes wrong with one call, from parsing to reporting, becomes that call's
error for the model to read (`prepared_calls.contained`); the turn goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_core.events import (
    Event,
    MessageCommitted,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallRunning,
    ToolCallStarted,
)
from hermes_core.loop.always_guard import hold_for
from hermes_core.loop.prepared_calls import PreparedCall, contained, prepare_calls
from hermes_core.loop.tool_record import finished_record, started_record
from hermes_core.loop.tool_waves import waves
from hermes_core.messages import ContentPart, Message, TextPart, ToolCall
from hermes_core.policy.approval import ApprovalPolicy, Approver, Decision, PolicyVerdict
from hermes_core.sandbox.alive_lock import Hold
from hermes_core.tools.base import CannotRun, SessionToolState, ToolContext, ToolLimits, ToolResult
from hermes_core.tools.registry import ToolRegistry
from hermes_core.workspace import Workspace

if TYPE_CHECKING:
    from hermes_core.policy.hooks import Hooks

log = logging.getLogger(__name__)

# Calls of one response that run at once. A model may put hundreds of distinct reads and
# searches in one reply: unbounded, 600 searches ran 334 rg at once, a third of them failed
# with "Too many open files" (a desktop's 1024 descriptors), and another session's
# read_file waited minutes (README "Limits").
MAX_PARALLEL_CALLS = 8


@dataclass(slots=True, kw_only=True)
class ToolRunner:
    """Runs the tool calls of a session's model responses."""

    tools: ToolRegistry
    policy: ApprovalPolicy
    approver: Approver
    workspace: Workspace
    state: SessionToolState
    limits: ToolLimits
    # Awaited before a call that may change the workspace runs (a checkpoint is taken).
    before_write: Callable[[], Awaitable[None]] | None = None
    hooks: Hooks | None = None  # pre_tool / post_tool command hooks
    # Whether the model takes images (a tool's images go to it after the results, or a note).
    accepts_images: Callable[[], bool] = lambda: False

    def prepare(self, tool_calls: list[ToolCall]) -> list[PreparedCall]:
        return prepare_calls(tool_calls, self.tools, self.workspace)

    async def run(self, calls: list[PreparedCall]) -> AsyncIterator[Event]:
        """Run one response's calls; yields their events and a MessageCommitted per result.

        When the user answers a permission request with "cancel", that call is marked
        `cancels_turn` and the calls not yet run get a "cancelled" result.
        """
        for item in calls:
            assert item.started is not None
            yield item.started
        cancelled = False
        for wave in waves(calls):
            runnable: list[PreparedCall] = []
            for item in wave:
                if cancelled:
                    item.result = ToolResult.error("Cancelled: the user cancelled this turn.")
                    continue
                if item.duplicate_of is not None or item.error is not None:
                    continue
                if self.hooks is not None and self.hooks.specs:
                    async for event in self._hook("pre_tool", item):
                        yield event
                    if item.result is not None:  # blocked
                        continue
                allowed = False
                with contained(item, "could not be checked for approval"):
                    allowed = await self._approve(item)
                if item.cancels_turn:
                    cancelled = True
                    item.result = ToolResult.error("Cancelled: the user cancelled this turn.")
                    continue
                if allowed:
                    runnable.append(item)
            if cancelled:
                for item in runnable:
                    item.result = ToolResult.error("Cancelled: the user cancelled this turn.")
                runnable = []
            if self.before_write is not None and any(_may_change_workspace(i) for i in runnable):
                await self.before_write()
            async for event in self._execute(runnable):
                yield event
            if self.hooks is not None and self.hooks.specs:
                for item in runnable:
                    async for event in self._hook("post_tool", item):
                        yield event
            for item in wave:
                if item.duplicate_of is not None:
                    item.result = item.duplicate_of.result
                elif item.error is not None:
                    item.result = ToolResult.error(item.error)
                assert item.result is not None
                async for event in self._finish(item):
                    yield event
        images = _images_message(calls) if self.accepts_images() else None
        if images is not None:
            yield MessageCommitted(images)

    async def _hook(self, event: str, item: PreparedCall) -> AsyncIterator[Event]:
        """One call's pre_tool or post_tool hooks: the editor's cards for those that blocked or
        failed. A pre_tool block becomes the call's result; anything else a hook says is
        added to the result the model reads."""
        assert self.hooks is not None and item.tool is not None
        payload: dict[str, Any] = {"tool": item.tool.name, "arguments": item.raw_args}
        if item.result is not None:
            payload |= {"result": item.result.text, "ok": item.result.ok}
        facts = None
        with contextlib.suppress(Exception):  # then the matcher reads them itself, and fails closed
            facts = item.facts()
        outcome = await self.hooks.run(
            event, payload, tool=item.tool, args=item.args, workspace=self.workspace, facts=facts
        )
        for card in outcome.cards:
            yield card
        item.hook_notes += [f"(From a hook:) {context}" for context in outcome.context]
        if outcome.blocked and event == "pre_tool":
            item.result = ToolResult.error(f"Blocked by a hook: {outcome.reason}")
        elif outcome.blocked:
            item.hook_notes.append(f"(A hook objected to this result:) {outcome.reason}")
        if event == "post_tool" and item.result is not None and item.hook_notes:
            item.result.text = "\n\n".join([item.result.text, *item.hook_notes])

    async def _approve(self, item: PreparedCall) -> bool:
        assert item.tool is not None and item.args is not None and item.started is not None
        verdict = self.policy.check(
            item.tool, item.args, self.workspace, call_id=item.call.id, facts=item.facts()
        )
        item.allow_outside = verdict.allow_outside
        if verdict.guarded:
            item.guarded = verdict  # judged again right before it runs (`_guard`)
        if verdict.action == "run":
            return True
        return await self._settle(item, verdict)

    async def _settle(self, item: PreparedCall, verdict: PolicyVerdict) -> bool:
        """Whether a call the policy did not simply run may run: rejected, or asked."""
        assert item.tool is not None and item.args is not None
        if verdict.action == "reject":
            item.result = ToolResult.error(verdict.reason)
            return False
        assert verdict.request is not None
        request = verdict.request
        try:
            diff = await item.tool.preview(item.args, self.workspace, allow_outside=verdict.allow_outside)
        except CannotRun as exc:
            item.result = ToolResult.error(str(exc))  # nobody is asked about a call that cannot work
            return False
        if diff is not None:
            request = dataclasses.replace(request, diff=diff)
        decision = await self.approver.decide(request)
        self.policy.record(verdict.request, decision)
        if decision is Decision.CANCELLED:
            item.cancels_turn = True
            return False
        if decision.allowed:
            return True
        remembered = ""
        if decision is Decision.REJECT_ALWAYS:
            remembered = " (and any like it for the rest of this session)"
        item.result = ToolResult.error(
            f"The user rejected this call{remembered}. Do not retry it as is; ask or take another approach.",
            rejected=True,
        )
        item.result.shown = "Rejected" + (f" ({remembered.strip(' ()')})" if remembered else "")
        return False

    async def _guard(self, item: PreparedCall) -> tuple[Hold | None, bool]:
        """For a stored "always" outside the sandbox: the lock that keeps sandboxed commands
        off while it runs, and whether it may run (when the lock cannot be had, the user
        is asked why). Other calls: (None, True)."""
        if item.guarded is None:
            return None, True
        outcome = hold_for(item, item.guarded, self.policy, self.workspace)
        if outcome is None or isinstance(outcome, Hold):
            return outcome, True
        allowed = await self._settle(item, outcome)
        if item.cancels_turn:
            item.result = ToolResult.error("Cancelled: the user cancelled this turn.")
        return None, allowed

    async def _execute(self, items: list[PreparedCall]) -> AsyncIterator[Event]:
        """Run the calls concurrently, yielding their events as they happen."""
        if not items:
            return
        queue: asyncio.Queue[Event | PreparedCall] = asyncio.Queue()
        running = asyncio.Semaphore(MAX_PARALLEL_CALLS)

        async def run(item: PreparedCall) -> None:
            assert item.tool is not None and item.args is not None

            def emit(event: Event) -> None:
                if isinstance(event, ToolCallProgress) and event.output and event.call_id == item.call.id:
                    item.output.append(event.output)
                queue.put_nowait(event)

            ctx = ToolContext(
                call_id=item.call.id,
                workspace=self.workspace,
                state=self.state,
                emit=emit,
                limits=self.limits,
                allow_outside=item.allow_outside,
                read_guard=self.policy.rules.read_guard if self.policy.rules is not None else None,
            )
            hold: Hold | None = None
            try:
                with contained(item, "failed"):
                    hold, allowed = await self._guard(item)
                    if allowed:
                        async with running:
                            item.result = await item.tool.run(item.args, ctx)
            finally:
                if hold is not None:
                    hold.release()
                queue.put_nowait(item)

        for item in items:
            queue.put_nowait(ToolCallRunning(item.call.id))
        tasks = [asyncio.create_task(run(item)) for item in items]
        try:
            remaining = len(tasks)
            while remaining:
                event = await queue.get()
                if isinstance(event, PreparedCall):
                    remaining -= 1
                else:
                    yield event
            while not queue.empty():
                event = queue.get_nowait()
                if not isinstance(event, PreparedCall):
                    yield event
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _finish(self, item: PreparedCall) -> AsyncIterator[Event]:
        result = item.result
        assert result is not None and item.started is not None
        if result.images and not self.accepts_images() and item.duplicate_of is None:
            result.text += " The current model does not accept images, so it cannot be shown; say so."
        finished = ToolCallFinished(
            call_id=item.call.id,
            status="completed" if result.ok else "failed",
            result=_cap(result.text, self.limits.max_output_chars),
            diff=result.diff,
            raw_output=result.raw_output,
            exit_code=result.exit_code,
            signal=result.signal,
            terminal_id=result.terminal_id,
            shown=result.shown,
        )
        yield finished
        message = Message(
            role="tool",
            content=finished.result,
            tool_call_id=item.call.id,
            name=item.tool.name if item.tool else item.call.name,
            is_error=not result.ok,
            display=tool_display(item.started, finished, item.output.text()),
        )
        yield MessageCommitted(message)


def _images_message(calls: list[PreparedCall]) -> Message | None:
    """The images the calls returned, as one user message after their results: chat
    completions takes no image in a tool result, and every API takes one from the user."""
    parts: list[ContentPart] = []
    ids: list[str] = []
    for item in calls:
        if item.result is None or item.duplicate_of is not None or not item.result.images:
            continue
        ids.append(item.call.id)
        parts.append(TextPart(f"(The image from your `{item.call.name}` call {item.call.id}:)"))
        parts.extend(item.result.images)
    if not parts:
        return None
    return Message(role="user", content=parts, display={"tool_images": ids})


def call_cards(calls: list[PreparedCall]) -> dict[str, Any]:
    """The starts of a response's tool calls, stored on the assistant message, so a replay
    shows the real command or path even for a call a crash cut off before its result."""
    cards = {}
    for item in calls:
        assert item.started is not None
        cards[item.started.call_id] = started_record(item.started)
    return {"tool_calls": cards}


def tool_display(started: ToolCallStarted, finished: ToolCallFinished, output: str = "") -> dict[str, Any]:
    """The events a finished call's card was drawn from (stored on the tool message):
    its start, the output it streamed and its end (see `tool_record`)."""
    return {**started_record(started), **finished_record(finished, output)}


def _may_change_workspace(item: PreparedCall) -> bool:
    tool = item.tool
    return tool is not None and (tool.kind in WORKSPACE_CHANGING_KINDS or tool.name == "delegate_task")


WORKSPACE_CHANGING_KINDS = frozenset({"edit", "delete", "move", "execute"})


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n… [{len(text) - limit:,} characters cut] …\n" + text[-limit // 2 :]
