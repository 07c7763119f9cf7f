"""A live session and its stored record, both ways: what gets written when, and what a
stored record gives back to a restored agent.

A session is stored lazily: its record is created with its first message, so sessions
that never got a prompt leave nothing behind. Nothing is written once it is closed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.agent import Agent
    from core.messages import Message
    from core.store import SessionRecord, SessionStore
    from core.tools.delegate import ChildReport
    from hermes_acp.session.state import Session

log = logging.getLogger(__name__)


def persist(session: Session, write: Callable[[SessionStore], Any]) -> None:
    """Queue a write, creating the session's record first if the store has none yet."""
    if session.closed:
        return
    if not session.stored:
        record = new_record(session)
        session.stored = True
        session.persister.submit(lambda store: store.create_session(record))
    session.persister.submit(write)


def persist_message(session: Session, message: Message) -> None:
    persist(session, lambda store: store.append_message(session.id, message))


def store_child(session: Session, report: ChildReport) -> None:
    """A subagent's transcript as a child session of this one: searchable, never listed."""
    from core.store import SessionRecord

    record = SessionRecord(
        id=report.child_id,
        cwd=session.cwd,
        extra_dirs=list(session.extra_dirs),
        parent_id=session.id,
        title=f"Subagent: {report.goal}"[:200],
        mode=session.agent.mode.value,
        model=session.model,
        input_tokens=report.usage.input_tokens,
        output_tokens=report.usage.output_tokens,
        cached_tokens=report.usage.cached_tokens,
        cost_usd=report.cost_usd,
        config={"subagent": {"parent": session.id, "toolCallId": report.parent_call_id}},
    )

    def write(store: SessionStore) -> None:
        store.create_session(record)
        for message in report.messages:
            store.append_message(report.child_id, message)

    persist(session, write)


def record_turn_error(session: Session, text: str) -> None:
    """Keep why the turn failed in its history, so a reloaded session shows it. A notice:
    the model never reads it (the next turn starts as if the failed one had no answer)."""
    from core.messages import Message

    notice = Message(role="assistant", content=text, display={"notice": "turn_error"})
    session.agent.messages.append(notice)
    persist_message(session, notice)


def replace_history(session: Session, messages: list[Message]) -> None:
    persist(session, lambda store: store.replace_messages(session.id, messages))


def save_record(session: Session, *, force: bool = False, **fields: Any) -> None:
    """Record fields changed. A session not stored yet gets them when it is created
    (with its first message), unless `force`."""
    if session.closed:
        return
    if session.stored:
        session.persister.submit(lambda store: store.update_session(session.id, **fields))
    elif force:
        persist(session, lambda store: store.update_session(session.id, **fields))


def save_turn_state(session: Session) -> None:
    """What a turn changes besides the history: usage, cost, "always" answers, the plan."""
    if not session.stored:
        return
    agent = session.agent
    total = agent.usage_total
    save_record(
        session,
        input_tokens=total.input_tokens,
        output_tokens=total.output_tokens,
        cached_tokens=total.cached_tokens,
        cost_usd=agent.cost_usd,
        approvals=agent.approvals.to_dict(),
        plan=[_plan_entry(e) for e in agent.tool_state.plan],
    )


def new_record(session: Session) -> SessionRecord:
    from core.store import SessionRecord

    agent = session.agent
    return SessionRecord(
        id=session.id,
        cwd=session.cwd,
        extra_dirs=list(session.extra_dirs),
        title=getattr(agent, "title", None),
        created_at=session.created,
        mode=agent.mode.value,
        model=session.model,
        reasoning_effort=agent.reasoning_effort,
        approvals=agent.approvals.to_dict(),
        system_prompt=agent.system_prompt,
    )


def restore_agent(agent: Agent, record: SessionRecord) -> None:
    """What the record remembers beyond the history: usage, cost, the plan."""
    from core.events import PlanEntry
    from core.models import Usage

    agent.usage_total = Usage(
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cached_tokens=record.cached_tokens,
    )
    agent.cost_usd = record.cost_usd
    entries = []
    for item in record.plan or []:
        try:
            entries.append(
                PlanEntry(item["content"], item.get("status", "pending"), item.get("priority", "medium"))
            )
        except (KeyError, TypeError):
            log.warning("session %s: skipping a malformed plan entry %r", record.id, item)
    agent.tool_state.plan = tuple(entries)
    agent.context_tokens = estimated_context(agent)


def estimated_context(agent: Agent) -> int:
    from core.context import estimate_messages_tokens

    return estimate_messages_tokens(agent.system_prompt, agent.messages, agent.tools.specs())


def existing_dirs(paths: Iterable[str]) -> list[str]:
    return [path for path in paths if Path(path).is_dir()]


def session_info(record: SessionRecord) -> dict[str, Any]:
    """A stored session as session/list shows it."""
    from datetime import UTC, datetime

    info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd}
    if record.extra_dirs:
        info["additionalDirectories"] = list(record.extra_dirs)
    if record.title:
        info["title"] = record.title
    if record.updated_at:
        stamp = datetime.fromtimestamp(record.updated_at, UTC).isoformat(timespec="milliseconds")
        info["updatedAt"] = stamp.replace("+00:00", "Z")
    return info


def _plan_entry(entry: Any) -> dict[str, Any]:
    return {"content": entry.content, "status": entry.status, "priority": entry.priority}
