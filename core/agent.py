"""Agent.run_turn(): the loop. (Being written; this file pins the public surface.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from core.approval import ApprovalMemory, Approver, Mode
from core.config import Settings
from core.events import Event, StopReason, Usage
from core.messages import ContentPart, Message
from core.providers.base import Provider
from core.tools.base import SessionToolState
from core.tools.registry import ToolRegistry
from core.workspace import Workspace


@dataclass(slots=True)
class TurnResult:
    stop_reason: StopReason
    messages: list[Message] = field(default_factory=list)  # committed this turn
    usage: Usage = field(default_factory=Usage)
    text: str = ""  # the final answer's text


class Agent:
    """One conversation: history, workspace, tools, approvals, model. Not thread-safe;
    one turn at a time.

    Construct with `Agent(settings=..., workspace=..., approver=...)`; everything else
    has defaults (providers built from settings, the default tool set, mode from
    settings, an empty history, a system prompt built for the workspace).
    """

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Workspace,
        approver: Approver,
        providers: list[Provider] | None = None,  # primary first, then fallbacks
        tools: ToolRegistry | None = None,
        mode: Mode | None = None,
        messages: list[Message] | None = None,
        system_prompt: str | None = None,
        approvals: ApprovalMemory | None = None,
        tool_state: SessionToolState | None = None,
    ) -> None:
        raise NotImplementedError

    # Public state the ACP side reads and sets:
    #   messages: list[Message]      the history (system prompt not included)
    #   system_prompt: str           fixed for the session's life
    #   mode: Mode                   settable between turns
    #   model: str                   settable between turns (rebuilds the provider chain)
    #   reasoning_effort: str | None settable
    #   approvals: ApprovalMemory
    #   tool_state: SessionToolState (plan, background processes)
    #   usage_total: Usage; cost_usd: float | None; context_tokens: int; context_window: int

    def run_turn(self, content: str | list[ContentPart]) -> AsyncIterator[Event]:
        """Yield the turn's events; the last is TurnEnded unless the consumer's task is
        cancelled, in which case CancelledError propagates after the stream closed,
        commands were killed and pending approvals resolved."""
        raise NotImplementedError

    async def compact(self) -> AsyncIterator[Event]:
        """Force a compression now (/compact)."""
        raise NotImplementedError
        yield  # pragma: no cover

    async def aclose(self) -> None:
        """Kill background processes, close provider clients."""
        raise NotImplementedError
