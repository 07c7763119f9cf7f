"""Approvals: the Approver port, the policy per mode, and the dangerous-command rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from core.events import ToolKind


class Mode(StrEnum):
    ASK = "ask"  # edits and commands ask
    ACCEPT_EDITS = "accept_edits"  # edits inside the workspace pass, commands ask
    PLAN = "plan"  # read-only: edit and command tools are not offered
    YOLO = "yolo"  # nothing asks except dangerous commands


class Decision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"
    CANCELLED = "cancelled"

    @property
    def allowed(self) -> bool:
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_ALWAYS)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    call_id: str
    tool: str
    title: str  # shows the command or path
    kind: ToolKind
    arguments: dict[str, Any]
    reason: str  # why it asks, in words: "runs a command", "edits a file", "outside the workspace"
    scope: str  # the key an "always" decision is remembered under, e.g. "terminal:git status"
    rule: str | None = None  # the dangerous-command rule that fired, if one did
    outside_paths: tuple[str, ...] = ()  # absolute paths outside the workspace this call touches

    @property
    def dangerous(self) -> bool:
        return self.rule is not None


class Approver(Protocol):
    async def decide(self, request: ApprovalRequest) -> Decision: ...


@dataclass(slots=True)
class ApprovalMemory:
    """The "always" decisions of one session (persisted with it)."""

    allowed: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, list[str]]:
        return {"allowed": sorted(self.allowed), "rejected": sorted(self.rejected)}

    @classmethod
    def from_dict(cls, data: dict[str, list[str]] | None) -> ApprovalMemory:
        data = data or {}
        return cls(set(data.get("allowed", [])), set(data.get("rejected", [])))
