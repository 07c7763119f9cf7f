"""A background command's end, shown on the card of the call that started it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_acp.session.state import Session
    from hermes_acp.session.turn import TurnRunner
    from hermes_core.execution.jobs import JobEnded


def report_job_ends(
    session: Session, turns: TurnRunner, spawn: Callable[[Coroutine[Any, Any, None]], None]
) -> None:
    """Update a job's card when it ends: at once while a turn runs (before its response),
    else with the next turn (no update may follow a prompt's response unasked)."""

    def on_end(ended: JobEnded) -> None:
        async def send() -> None:
            await turns.channel.send_notification("session/update", session.translator.cards.job_ended(ended))

        spawn(turns.send_beside(session, send, unsolicited=True))

    session.agent.tool_state.jobs.report_ends_to(on_end)
