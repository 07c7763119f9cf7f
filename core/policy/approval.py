"""Approvals: the Approver port and the policy that decides, per call, to run, ask or reject.

The dangerous-command rules (`hermes_core.command_rules.check`) decide which commands ask in
every mode; what an "always" covers for a command is `hermes_core.command_rules.scope`; what
in a call would escape the sandbox is `hermes_core.policy.sandbox_escapes`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from hermes_core.events import FileDiff, ToolKind
from hermes_core.policy.sandbox_escapes import (
    EDIT_KINDS,
    UNCONFINED_SUFFIX,
    confinement_of,
    protected_write,
    unconfined_reason,
    unguarded_edits_reason,
    unpinned_links_reason,
    would_leave_sandbox,
)

if TYPE_CHECKING:
    from hermes_core.policy.permission_rules import PermissionRules
    from hermes_core.tools.base import ApprovalFacts, Tool
    from hermes_core.workspace import Workspace

__all__ = [
    "EDIT_KINDS",
    "ApprovalMemory",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "Mode",
    "PolicyVerdict",
    "scope_key",
]


# Why a stored "always" outside the sandbox does not cover a background command.
BACKGROUND = (
    "it would run in the background outside the sandbox, and a sandboxed command started "
    "meanwhile could change what it runs"
)


class Mode(StrEnum):
    ASK = "ask"  # edits and commands ask
    ACCEPT_EDITS = "accept_edits"  # edits inside the workspace pass, commands ask
    PLAN = "plan"  # read-only: edit and command tools are not offered
    AUTO = "auto"  # edits inside the workspace and sandboxed commands pass; leaving the sandbox asks
    YOLO = "yolo"  # nothing asks except dangerous commands (still sandboxed unless sandbox = "off")


class Decision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"
    CANCELLED = "cancelled"
    ALLOW_PROJECT = "allow_project"  # always, in this project's later sessions too

    @property
    def allowed(self) -> bool:
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_ALWAYS, Decision.ALLOW_PROJECT)


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
    # For commands: "sandboxed", "unconfined" (sandbox off, unavailable or an approved
    # re-run outside it); None for other tools.
    sandbox: str | None = None
    diff: FileDiff | None = None  # an edit's change, shown while the user decides
    # False when an "always" could not cover what this call runs (`hermes_core.fence.command_files`).
    always_offered: bool = True
    leaves_sandbox: bool = False  # an unconfined re-run, or any command while the sandbox cannot start

    @property
    def dangerous(self) -> bool:
        return self.rule is not None

    @property
    def offers_always(self) -> bool:
        return self.always_offered and not self.dangerous

    @property
    def offers_project(self) -> bool:
        """Whether "always … in this project" may be offered: never for a path outside the
        workspace or a command outside the sandbox (its "always" is bound to this session's
        view of the files it runs; the scope then ends with that binding, not the suffix)."""
        return self.offers_always and not self.outside_paths and not self.leaves_sandbox


class Approver(Protocol):
    async def decide(self, request: ApprovalRequest) -> Decision: ...


class ApprovalMemory:
    """The "always" decisions of one session (persisted with it).

    `stored` is the form the session record keeps, worked out when an answer changes rather
    than each time a turn is saved: a turn that asks nothing runs no approval code.
    """

    __slots__ = ("allowed", "rejected", "stored")

    def __init__(self, allowed: Iterable[str] = (), rejected: Iterable[str] = ()) -> None:
        self.allowed: frozenset[str] = frozenset(allowed)
        self.rejected: frozenset[str] = frozenset(rejected)
        self.stored: dict[str, list[str]] = self._as_stored()

    def allow(self, scope: str) -> None:
        self.allowed |= {scope}
        self.rejected -= {scope}
        self.stored = self._as_stored()

    def reject(self, scope: str) -> None:
        self.rejected |= {scope}
        self.allowed -= {scope}
        self.stored = self._as_stored()

    def forget(self, scope: str) -> None:
        self.allowed -= {scope}
        self.stored = self._as_stored()

    def _as_stored(self) -> dict[str, list[str]]:
        return {"allowed": sorted(self.allowed), "rejected": sorted(self.rejected)}

    @classmethod
    def from_dict(cls, data: dict[str, list[str]] | None) -> ApprovalMemory:
        data = data or {}
        return cls(data.get("allowed", []), data.get("rejected", []))


# --------------------------------------------------------------------------------------
# The policy: run, ask or reject one tool call


_KIND_REASONS: dict[str, str] = {
    "edit": "edits a file",
    "delete": "deletes a file",
    "move": "moves a file",
    "execute": "runs a command",
    "fetch": "fetches from the network",
}


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """What to do with one tool call before it runs."""

    action: Literal["run", "ask", "reject"]
    request: ApprovalRequest | None = None  # set for "ask" and "reject"
    reason: str = ""  # for "reject": the message the model reads
    allow_outside: bool = False  # once approved, the call may touch paths outside the workspace
    # A stored "always" outside the sandbox: it runs only while no sandboxed command can
    # change what it runs (`hermes_core.loop.always_guard`); `request` asks otherwise.
    guarded: bool = False


def scope_key(tool: Tool[Any], args: BaseModel, facts: ApprovalFacts | None = None) -> str:
    """The key an "always" decision for this call is remembered under: the tool's name,
    plus what its command line (`command_scope`) or its `approval_scope` narrows it to
    (`terminal:git status`). A tool whose scope is its own name (edits) gets one key for
    all its calls."""
    facts = facts if facts is not None else tool.approval_facts(args)
    if facts.command is None:
        inner = tool.approval_scope(args)
    else:
        # The command rules and the command-file fence (~40-60 ms of imports: the shell's
        # program tables) load at a session's first command, not before its first
        # answer: a reply without a command never needs them.
        from hermes_core.command_rules.scope import command_scope

        inner = command_scope(facts.command)
    if inner == tool.name:
        return tool.approval_group or tool.name
    return f"{tool.name}:{inner}"


def _outside_key(base: str, paths: tuple[Path, ...]) -> str:
    # An "always" for a call outside the workspace covers the same tool scope in exactly
    # the directories seen, never their parents or children: "patch in /etc".
    dirs = sorted({str(p if p.is_dir() else p.parent) for p in paths})
    return f"{base} in {', '.join(dirs)}"


def _subject(key: str) -> str:
    _, _, rest = key.partition(":")
    return rest or key


class ApprovalPolicy:
    """Decides per call whether it runs, asks the user, or is rejected, from the session's
    mode and its remembered "always" decisions.

    Order of the rules, first match wins:
    0. a deny permission rule (core/policy/permission_rules.py) rejects, in every mode;
    1. plan mode rejects tools that are not read-only;
    2. a remembered "always reject" rejects;
    3. a dangerous command, a call its tool says always asks (`ApprovalFacts.always_asks`: writing the
       user's memory, which plan mode refuses), or a file tool writing a file that other
       programs run outside the sandbox (`hermes_core.fence.protected_paths`: `.git/config`, hooks…)
       asks in every mode, whatever was remembered;
    4. a path outside the workspace asks in every mode, unless "always" was granted for
       this tool scope in that directory;
    5. a command that would run outside the sandbox (an unconfined re-run, or any command
       while the sandbox cannot start) asks in every mode, unless "always" was granted
       for that command scope outside the sandbox;
    5a. an ask permission rule asks, in every mode;
    6. tools that need no approval run; yolo runs everything; accept_edits and auto run
       edit/delete/move tools; auto runs sandboxed commands; an allow permission rule, a
       remembered "always allow" or one "in this project" runs;
    7. otherwise ask.
    """

    __slots__ = ("memory", "mode", "rules")

    def __init__(self, mode: Mode, memory: ApprovalMemory, rules: PermissionRules | None = None) -> None:
        self.mode = mode
        self.memory = memory
        self.rules = rules  # the user's and the project's permission rules (core/policy/permission_rules.py)

    def switch(self, mode: Mode) -> None:
        self.mode = mode

    def use_rules(self, rules: PermissionRules) -> None:
        self.rules = rules

    def check(
        self,
        tool: Tool[Any],
        args: BaseModel,
        workspace: Workspace,
        *,
        call_id: str,
        facts: ApprovalFacts | None = None,
    ) -> PolicyVerdict:
        # What the tool declares about this call, its command line read once for every rule
        # (and for the hooks' matchers, when the caller passes the facts it read for them).
        facts = facts if facts is not None else tool.approval_facts(args)
        base = scope_key(tool, args, facts)
        outside = self._outside_paths(tool, args, workspace)
        key = _outside_key(base, outside) if outside else base
        rule = self._dangerous(tool, facts, workspace)
        confinement = confinement_of(tool, workspace)
        leaves_sandbox = would_leave_sandbox(facts, confinement)
        always_offered = True
        title = tool.title(args, workspace)
        if outside:
            # The path as written may read as the project's (`docs/x` where a sandboxed
            # command made `docs` a link out); the reason is in `_meta`, which editors do not
            # draw. The title names where it lands.
            title += f" (outside the workspace: {', '.join(str(p) for p in outside)})"
        if leaves_sandbox:
            key = f"{base} {UNCONFINED_SUFFIX}"
            # loaded at the first command: see scope_key
            from hermes_core.fence.command_files import binding, workspace_programs

            scope = workspace.scope
            pinned = binding(facts.command, scope.cwd, scope.roots) if facts.command is not None else None
            if facts.command is not None and (
                theirs := workspace_programs(facts.command, workspace.scope.cwd)
            ):
                # The user must see that `ls` here is the workspace's file (the sandbox may replace it).
                title += f" ({', '.join(theirs)}, a file of the workspace)"
            if pinned is None:
                always_offered = False
            elif pinned.digest:
                key = f"{key}, {pinned.describe()}"
        protected = protected_write(tool, args, workspace)
        asks_why = facts.always_asks or (
            None
            if leaves_sandbox
            else (
                unpinned_links_reason(confinement, workspace)
                or unguarded_edits_reason(confinement, workspace)
            )
        )
        if asks_why:
            always_offered = False
        if protected:
            # Asked every time, like a dangerous command: "always" would let later writes
            # of whatever content through.
            key = f"{base} on {protected[0]}"
            rule = rule or protected[1]
        if rule:
            reason = f"dangerous command: {rule}" if tool.kind == "execute" else rule
        elif asks_why:
            reason = asks_why
        elif outside:
            reason = "outside the workspace"
        elif leaves_sandbox:
            reason = unconfined_reason(confinement, workspace.sandbox)
        else:
            reason = _KIND_REASONS.get(tool.kind, f"uses {tool.name}")
        sandbox = None
        if confinement is not None:
            sandbox = "unconfined" if leaves_sandbox or confinement != "sandboxed" else "sandboxed"
        request = ApprovalRequest(
            call_id=call_id,
            tool=tool.name,
            title=title,
            kind=tool.kind,
            arguments=args.model_dump(mode="json"),
            reason=reason,
            scope=key,
            rule=rule,
            outside_paths=tuple(str(p) for p in outside),
            sandbox=sandbox,
            always_offered=always_offered,
            leaves_sandbox=leaves_sandbox,
        )
        ask = PolicyVerdict("ask", request, reason, allow_outside=bool(outside) or leaves_sandbox)

        ruled = self.rules.match(tool, args, workspace, facts) if self.rules is not None else None
        if ruled is not None and ruled.action == "deny":  # in every mode
            return PolicyVerdict("reject", request, ruled.model_reason())
        if self.mode is Mode.PLAN and not tool.read_only:
            return PolicyVerdict(
                "reject",
                request,
                f"rejected: `{tool.name}` is not available in plan mode, which is read-only. "
                "Finish the plan; the user switches modes to carry it out.",
            )
        if self.mode is Mode.PLAN and asks_why:
            return PolicyVerdict(
                "reject", request, f"rejected: in plan mode, which is read-only, nothing {asks_why}"
            )
        for remembered in (base, key):
            if refused := self._rejected_scope(remembered):
                return PolicyVerdict(
                    "reject", request, f"rejected: the user chose to always reject `{_subject(refused)}`"
                )
        if rule or asks_why:
            return ask
        if outside:
            if key in self.memory.allowed and always_offered:
                return PolicyVerdict("run", None, "allowed always outside the workspace", allow_outside=True)
            return ask
        if leaves_sandbox:
            # A command no "always" could be offered for is covered by none given earlier
            # to its scope (`cat ~/.ssh/id_ed25519` after "always" for `cat README.md`).
            if key in self.memory.allowed and always_offered:
                if facts.background:
                    # Nothing could hold off the sandbox for as long as it runs (`alive_lock`).
                    return dataclasses.replace(ask, request=dataclasses.replace(request, reason=BACKGROUND))
                # Applied only once the runner holds off every sandboxed command and checks again.
                return PolicyVerdict(
                    "run", request, "allowed always outside the sandbox", allow_outside=True, guarded=True
                )
            return ask
        if ruled is not None and ruled.action == "ask":  # in every mode
            request = dataclasses.replace(request, reason=ruled.user_reason())
            return PolicyVerdict("ask", request, request.reason)
        if not tool.needs_approval:
            return PolicyVerdict("run", None, "needs no approval")
        if self.mode is Mode.YOLO:
            return PolicyVerdict("run", None, "yolo mode")
        if self.mode in (Mode.ACCEPT_EDITS, Mode.AUTO) and tool.kind in EDIT_KINDS:
            return PolicyVerdict("run", None, "edits are accepted in this mode")
        if self.mode is Mode.AUTO and confinement == "sandboxed":
            return PolicyVerdict("run", None, "auto mode: the command runs in the sandbox")
        if ruled is not None and ruled.action == "allow":
            return PolicyVerdict("run", None, f"allowed by the permission rule `{ruled.rule.text}`")
        if base in self.memory.allowed or (self.rules is not None and base in self.rules.project_allowed):
            return PolicyVerdict("run", None, f"always allowed: `{_subject(base)}`")
        if self.rules is not None and (waiting := self.rules.waiting_allow(tool, args, workspace, facts)):
            note = f"`{waiting.text}` ({waiting.source}) would allow it once you trust it: /permissions trust"
            return dataclasses.replace(ask, request=dataclasses.replace(request, reason=f"{reason}; {note}"))
        return ask

    def record(self, request: ApprovalRequest, decision: Decision) -> None:
        """Remember an "always" answer under the request's scope.

        ALLOW_ALWAYS on a dangerous request, or one that offered no "always" (an unconfined
        command whose files cannot be pinned, `hermes_core.fence.command_files`; an `always_asks`
        call), is treated as ALLOW_ONCE: nothing is remembered, so neither that command nor
        anything else under its scope skips a later question (`check` asks for dangerous
        commands regardless, and remembering the scope would let the harmless commands
        sharing it, `rm file`, pass silently on the strength of an answer given to
        `rm -rf /`). A REJECT_ALWAYS is remembered for any request.
        """
        if decision is Decision.ALLOW_PROJECT and self._project_wide(request):
            self.memory.allow(request.scope)
            self.rules.allow_in_project(request.scope)  # type: ignore[union-attr]
        elif decision in (Decision.ALLOW_ALWAYS, Decision.ALLOW_PROJECT) and request.offers_always:
            self.memory.allow(request.scope)
        elif decision is Decision.REJECT_ALWAYS:
            self.memory.reject(request.scope)

    def _rejected_scope(self, scope: str) -> str | None:
        """The remembered rejection covering `scope`: the same scope, or a wider one it
        narrows by options (rejecting `rm` also rejects `rm -r`; allowing never widens)."""
        if scope in self.memory.rejected:
            return scope
        return next((r for r in self.memory.rejected if scope.startswith(r + " ")), None)

    def _project_wide(self, request: ApprovalRequest) -> bool:
        """Whether an "in this project" answer may outlive the session: only where the card
        offered it (never for a path outside the workspace or a command run outside the
        sandbox, whose "always" is bound to this session's view of the files it runs)."""
        return self.rules is not None and request.offers_project

    @staticmethod
    def _outside_paths(tool: Tool[Any], args: BaseModel, workspace: Workspace) -> tuple[Path, ...]:
        scope = workspace.scope
        seen: dict[Path, None] = {}
        for raw in tool.paths(args):
            resolved = scope.absolute(raw)
            if scope.outside(resolved):
                seen[resolved] = None
        return tuple(seen)

    @staticmethod
    def _dangerous(tool: Tool[Any], facts: ApprovalFacts, workspace: Workspace) -> str | None:
        if tool.kind != "execute" or not tool.needs_approval or facts.command is None:
            return None
        from hermes_core.command_rules.check import (
            dangerous_rule,
        )  # loaded at the first command: see scope_key

        return dangerous_rule(facts.command, roots=[str(root) for root in workspace.scope.roots])
