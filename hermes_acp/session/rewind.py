"""Rewinding a session to just before one of its prompts: `/rewind` and `_hermes/rewind`.

Files go back through the session's checkpoints (core/rewind/checkpoints.py); the conversation
is cut at the prompt, after the whole of it was copied into a forked session, so the
turns cut off stay reachable. Files the user changed by hand since the agent last
touched them are kept and named, unless the user says `force`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from hermes_acp.session.state import Session
    from hermes_core.messages import Message
    from hermes_core.rewind.checkpoints import RestoreReport, TurnRecord

log = logging.getLogger(__name__)

What = Literal["both", "files", "chat"]
PREVIEW_LENGTH = 70


class RewindParams(BaseModel):
    """`_hermes/rewind` params: without `prompt`, the list; with it, the rewind."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", defer_build=True)

    session_id: str = Field(alias="sessionId")
    prompt: int | None = Field(default=None, ge=1)  # 1-based, as `/rewind` numbers them
    restore: What = "both"
    force: bool = False  # also overwrite files the user changed by hand since
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


@dataclass(slots=True)
class Prompt:
    number: int
    index: int  # in the agent's history
    prompt_id: str
    text: str
    files: list[str] = field(default_factory=list)  # what the turn changed
    record: TurnRecord | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"number": self.number, "text": self.text, "files": self.files}


@dataclass(slots=True)
class Outcome:
    prompt: Prompt
    what: What
    report: RestoreReport | None = None
    forked: str | None = None  # the session holding the turns cut off

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"prompt": self.prompt.to_wire(), "restore": self.what}
        if self.report is not None:
            wire |= {
                "restored": self.report.restored,
                "deleted": self.report.deleted,
                "kept": self.report.kept,
                "lost": self.report.lost,
                "failed": self.report.failed,
            }
        if self.forked is not None:
            wire["forkedSessionId"] = self.forked
        return wire


class RewindError(ValueError):
    pass


async def session_prompts(session: Session) -> list[Prompt]:
    """The session's prompts still in its history, oldest first, with the files each changed."""
    checkpoints = session.agent.checkpoints
    if checkpoints is not None:
        await checkpoints.settled()
    return await asyncio.to_thread(_prompts, session)


def _prompts(session: Session) -> list[Prompt]:
    from hermes_core.loop.turn_context import without_turn_preamble

    agent = session.agent
    records = {r.prompt_id: r for r in agent.checkpoints.store.turns()} if agent.checkpoints else {}
    prompts: list[Prompt] = []
    for index, message in enumerate(agent.messages):
        prompt_id = _prompt_id(message)
        if prompt_id is None:
            continue
        typed = (message.display or {}).get("prompt_text")
        text = typed if isinstance(typed, str) else without_turn_preamble(message.text)
        prompt = Prompt(len(prompts) + 1, index, prompt_id, _preview(text))
        prompt.record = records.get(prompt_id)
        if prompt.record is not None and agent.checkpoints is not None:
            try:
                prompt.files = agent.checkpoints.store.changed_files(prompt.record)
            except (OSError, ValueError) as exc:
                log.warning(
                    "session %s: checkpoint of prompt %d unreadable: %s", session.id, prompt.number, exc
                )
        prompts.append(prompt)
    return prompts


async def rewind(session: Session, number: int, what: What, *, force: bool) -> Outcome:
    """Files and/or conversation back to just before prompt `number`."""
    prompts = await session_prompts(session)
    if not prompts:
        raise RewindError("This session has no prompts to rewind to.")
    if not 1 <= number <= len(prompts):
        raise RewindError(f"There is no prompt {number}; choose 1 to {len(prompts)}.")
    prompt = prompts[number - 1]
    outcome = Outcome(prompt, what)
    if what in ("both", "files"):
        checkpoints = session.agent.checkpoints
        records = [p.record for p in prompts[number - 1 :] if p.record is not None]
        if checkpoints is not None:
            outcome.report = await asyncio.to_thread(
                checkpoints.store.restore, records, force=force, protected=_protected(session)
            )
    if what in ("both", "chat"):
        outcome.forked = await _cut_conversation(session, prompt)
    return outcome


def _protected(session: Session) -> Callable[[str], str | None]:
    """Why a path, written, runs outside the sandbox: what the file tools ask for in every
    mode (`sandbox_escapes.protected_paths`), which a rewind does not write unasked."""
    from hermes_core.policy.sandbox_escapes import protected_paths

    workspace = session.agent.workspace

    def why(path: str) -> str | None:
        found = protected_paths([path], workspace)
        return None if found is None else found[1]

    return why


async def _cut_conversation(session: Session, prompt: Prompt) -> str:
    """Copy the session into a fork (the turns cut off stay there), then cut its history
    just before the prompt, in the store and for the model."""
    from hermes_core.store.writer import persist

    agent = session.agent
    await session.persister.flush()
    store = await session.persister.store()
    fork_id = secrets.token_hex(16)
    await asyncio.to_thread(store.fork_session, session.id, fork_id)
    if agent.checkpoints is not None:
        await asyncio.to_thread(agent.checkpoints.store.copy_to, fork_id)
    agent.replace_history(agent.messages[: prompt.index])
    persist(session, lambda store: store.cut_history(session.id, prompt.prompt_id))
    await session.persister.flush()
    log.info("session %s rewound to prompt %d; the rest is in %s", session.id, prompt.number, fork_id)
    return fork_id


def _prompt_id(message: Message) -> str | None:
    if message.role != "user" or not message.display:
        return None
    value = message.display.get("prompt")
    return value if isinstance(value, str) else None


def _preview(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_LENGTH else line[: PREVIEW_LENGTH - 1] + "…"


# -- /rewind ---------------------------------------------------------------------------


def parse_argument(argument: str) -> tuple[int | None, What, bool]:
    """`"3 files force"` -> (3, "files", True). RewindError for anything else."""
    number: int | None = None
    what: What = "both"
    force = False
    for word in argument.split():
        if word.isdigit() and number is None:
            number = int(word)
        elif word in ("files", "chat"):
            what = word  # type: ignore[assignment]
        elif word == "force":
            force = True
        else:
            raise RewindError(f"`/rewind` does not understand `{word}`. {USAGE}")
    return number, what, force


USAGE = (
    "Use `/rewind` to list the prompts, `/rewind N` to restore files and conversation to just "
    "before prompt N, `/rewind N files` or `/rewind N chat` for one of the two; add `force` to "
    "also overwrite files you changed by hand since."
)


def list_text(prompts: list[Prompt]) -> str:
    if not prompts:
        return "Nothing to rewind: this session has no prompts yet."
    lines = ["Prompts of this session (`/rewind N` goes back to just before N):"]
    for prompt in prompts:
        files = ", ".join(f"`{f}`" for f in prompt.files) if prompt.files else "no files changed"
        lines.append(f"{prompt.number}. {prompt.text} — {files}")
    return "\n".join(lines)


def outcome_text(outcome: Outcome) -> str:
    lines = [f"Rewound to just before prompt {outcome.prompt.number} ({outcome.prompt.text})."]
    report = outcome.report
    if report is not None:
        if report.restored:
            lines.append("Restored: " + ", ".join(f"`{f}`" for f in report.restored) + ".")
        if report.deleted:
            lines.append(
                "Removed (created after that prompt): " + ", ".join(f"`{f}`" for f in report.deleted) + "."
            )
        if report.kept:
            lines.append(
                "Kept as they are, changed by hand since: "
                + ", ".join(f"`{f}`" for f in report.kept)
                + " (`force` overwrites them)."
            )
        if report.lost:
            lines.append("Too large to have been kept: " + ", ".join(f"`{f}`" for f in report.lost) + ".")
        if report.failed:
            lines.append("Could not be restored: " + "; ".join(f"`{f}`" for f in report.failed) + ".")
        if not (report.restored or report.deleted or report.kept or report.lost or report.failed):
            lines.append("No files needed restoring.")
    if outcome.forked is not None:
        lines.append(
            "The conversation continues from that point; "
            f"the turns cut off are in session `{outcome.forked}`."
        )
    return "\n".join(lines)


async def rewind_command(session: Session, argument: str) -> str:
    """The answer to `/rewind [N] [files|chat] [force]`."""
    try:
        number, what, force = parse_argument(argument)
        if number is None:
            return list_text(await session_prompts(session))
        return outcome_text(await rewind(session, number, what, force=force))
    except RewindError as exc:
        return str(exc)


async def rewind_request(session: Session, request: RewindParams) -> dict[str, Any]:
    """`_hermes/rewind`: the prompts (no `prompt`), or the rewind's outcome."""
    from hermes_acp.session.errors import INVALID_PARAMS, protocol_error

    try:
        if request.prompt is None:
            return {"prompts": [p.to_wire() for p in await session_prompts(session)]}
        if session.turn is not None or session.waiting:
            raise RewindError("A turn is running; cancel it or wait for it to end before rewinding.")
        outcome = await rewind(session, request.prompt, request.restore, force=request.force)
    except RewindError as exc:
        raise protocol_error(INVALID_PARAMS, str(exc), {"field": "prompt"}) from None
    return outcome.to_wire()
