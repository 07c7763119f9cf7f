"""Using the engine as a library: one turn on a local workspace, without an editor.

from hermes_core import chat
chat("what does main.py do?", cwd=".")
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hermes_core.agent import Agent
from hermes_core.config import Settings
from hermes_core.events import Event, TurnEnded
from hermes_core.messages import ContentPart
from hermes_core.policy.approval import ApprovalRequest, Approver, Decision


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


class StaticApprover:
    """Answers every approval request the same way (library use, scripts, tests)."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    async def decide(self, request: ApprovalRequest) -> Decision:
        return self.decision


def _local_agent(
    settings: Settings | None, cwd: str | Path, approver: Approver | None, **agent_options: Any
) -> Agent:
    from hermes_core.config import load_settings
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.workspace import LocalWorkspace, WorkspaceScope

    settings = settings or load_settings()
    scope = WorkspaceScope(Path(cwd).resolve())
    workspace = LocalWorkspace(scope, sandbox=Sandbox.from_settings(settings, scope))
    return Agent(
        settings=settings,
        workspace=workspace,
        approver=approver or StaticApprover(Decision.REJECT_ONCE),
        **agent_options,
    )
