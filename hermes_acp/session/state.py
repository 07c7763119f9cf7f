"""What one connection and each of its sessions hold: plain state, no protocol logic."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_acp.bridge.events import EventTranslator
    from hermes_core.agent import Agent
    from hermes_core.mcp.connections import McpConnections
    from hermes_core.store.records import SessionSnapshot
    from hermes_core.store.writer import Persister

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ClientProfile:
    """What the client said it can do in `initialize` (one per connection)."""

    read_file: bool = False
    write_file: bool = False
    terminal: bool = False
    terminal_auth: bool = False  # may be offered a `type: "terminal"` auth method
    terminal_meta: bool = False  # Zed's `_meta.terminal_output` convention
    boolean_options: bool = False  # may be sent `type: "boolean"` config options
    elicitation_form: bool = False  # may be sent `elicitation/create` in form mode
    prompt_usage: bool = False  # takes the draft `usage` field in the prompt response

    @property
    def offers_workspace(self) -> bool:
        return self.read_file or self.write_file or self.terminal


@dataclass(slots=True)
class Turn:
    task: asyncio.Task[str] | None = None
    cancel_requested: bool = False


@dataclass(slots=True)
class QueuedPrompt:
    """A prompt that came in while a turn ran: it waits for its place, then runs."""

    preview: str  # for /queue
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: bool = False  # answered `cancelled` instead of running


@dataclass(slots=True)
class Session:
    id: str
    cwd: str
    extra_dirs: list[str]
    agent: Agent
    translator: EventTranslator
    persister: Persister
    mcp: McpConnections | None = None  # the editor's MCP servers, connected for this session
    mcp_problems: list[str] = field(default_factory=list)  # servers left out, one line each
    stored: bool = False  # the store has a record for it
    closed: bool = False  # closed, deleted or shut down: nothing more is written
    turn: Turn | None = None
    waiting: list[QueuedPrompt] = field(default_factory=list)  # in arrival order
    pending_model: str | None = None  # set during a turn; applied when it ends
    extra_models: list[str] = field(default_factory=list)  # picked with /model, not in any list
    created: float = field(default_factory=time.time)
    prompted: bool = False  # a prompt came in: from now on a prompt response may be out
    # Updates that background work (the model-list refresh) wants to send once a prompt
    # may have been answered: no `session/update` may follow a prompt's response, so they
    # go out at the end of the running turn, before its response, or with the next turn.
    held_updates: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def model(self) -> str:
        return self.pending_model or self.agent.model

    def snapshot(self) -> SessionSnapshot:
        """What the store keeps of the session besides its history."""
        from hermes_core.store.records import SessionSnapshot

        agent, conversation = self.agent, self.agent.conversation
        return SessionSnapshot(
            title=conversation.title,
            mode=agent.mode.value,
            model=self.model,
            reasoning_effort=agent.reasoning_effort,
            approvals=agent.approvals.stored,
            system_prompt=agent.system_prompt,
            usage=conversation.usage,
            cost_usd=conversation.cost_usd,
            plan=[
                {"content": e.content, "status": e.status, "priority": e.priority}
                for e in agent.tool_state.plan
            ],
        )

    async def release(self) -> None:
        """Stop what the session runs besides its turn: the agent's background processes,
        workspace watcher and provider clients, then its MCP servers."""
        await release(self.agent, self.mcp)


async def release(agent: Agent | None, mcp: McpConnections | None) -> None:
    """Free an agent and MCP connections, whichever exist; a failing step is logged."""
    for closer in (agent, mcp):
        if closer is None:
            continue
        try:
            await closer.aclose()
        except Exception:
            log.debug("cleanup step failed", exc_info=True)
