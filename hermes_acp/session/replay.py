"""A stored session, shown again: the `session/update` stream `session/load` sends.

Everything goes out before the load's response, in the order an editor rebuilds its
view: the conversation (user and agent chunks, thoughts, tool calls with their final
status, diffs and output), then the latest plan, the context usage, and the commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_acp.session.slash.menu import commands_update

if TYPE_CHECKING:
    from core.events import PlanEntry
    from core.messages import Message
    from hermes_acp.bridge.events import EventTranslator


def replay_updates(
    translator: EventTranslator,
    messages: Sequence[Message],
    *,
    plan: Iterable[PlanEntry] = (),
    used_tokens: int,
    context_window: int,
    cost_usd: float | None = None,
) -> list[dict[str, Any]]:
    session_id = translator.session_id
    updates = translator.replay_conversation(messages)
    entries = list(plan)
    if entries:
        updates.append(translator.plan_update(entries))
    usage: dict[str, Any] = {
        "sessionUpdate": "usage_update",
        "used": max(0, used_tokens),
        "size": max(0, context_window),
    }
    if cost_usd is not None:
        usage["cost"] = {"amount": float(cost_usd), "currency": "USD"}
    updates.append({"sessionId": session_id, "update": usage})
    updates.append(commands_update(session_id))
    return updates
