"""Building real agents against the fake provider, for loop tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hermes_core.agent import Agent
from hermes_core.config import Settings
from hermes_core.events import Event, TurnEnded
from hermes_core.policy.approval import ApprovalRequest, Decision
from hermes_core.workspace import LocalWorkspace, WorkspaceScope
from tests.support.fake_provider import FakeProvider

API_SHAPES = ("openai", "anthropic", "openai-responses")

# Agents built by make_agent, closed by the `close_agents` fixture (their HTTP clients).
OPEN_AGENTS: list[Any] = []  # agents and providers a test built; closed after it (agent_test)


class ScriptedApprover:
    """Answers approval requests from a list (the last answer repeats) and records them."""

    def __init__(self, *decisions: Decision) -> None:
        self.decisions = list(decisions) or [Decision.ALLOW_ONCE]
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        if len(self.decisions) > 1:
            return self.decisions.pop(0)
        return self.decisions[0]


def settings_for(fake: FakeProvider, home: Path, provider: str = "openai", **values: Any) -> Settings:
    base: dict[str, Any] = {
        "home": home,
        "provider": provider,
        "model": "claude-sonnet-4" if provider == "anthropic" else "gpt-4.1",
        "openai_api_key": "test-key",
        "anthropic_api_key": "test-key",
        "openai_base_url": fake.openai_base_url,
        "anthropic_base_url": fake.anthropic_base_url,
        "retry_base_seconds": 0.001,
        "retry_cap_seconds": 0.01,
        "stale_stream_seconds": 5.0,
    }
    base.update(values)
    return Settings.model_validate(base)


def make_agent(
    fake: FakeProvider,
    workdir: Path,
    provider: str = "openai",
    *,
    approver: Any = None,
    settings: dict[str, Any] | None = None,
    home: Path | None = None,
    **agent_options: Any,
) -> Agent:
    home = home or workdir.parent / f"{workdir.name}-home"
    agent = Agent(
        settings=settings_for(fake, home, provider, **(settings or {})),
        workspace=LocalWorkspace(WorkspaceScope(workdir)),
        approver=approver or ScriptedApprover(Decision.ALLOW_ONCE),
        **agent_options,
    )
    OPEN_AGENTS.append(agent)
    return agent


async def close_open_agents() -> None:
    while OPEN_AGENTS:
        await OPEN_AGENTS.pop().aclose()


async def collect(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]


def ended(events: list[Event]) -> TurnEnded:
    last = events[-1]
    assert isinstance(last, TurnEnded), f"the turn did not end with TurnEnded: {last!r}"
    return last


def of_type(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
