"""A stored "always" outside the sandbox, applied only while no sandboxed command can change
what it runs (issue 19).

The policy checked the command's names and bound scripts when it was approved; a sandboxed
command still running could swap a checked name for a link to a secret, or rewrite a bound
script, before the unconfined command opens it. So right before the call runs, the runner
takes the agent home's exclusive lock (`hermes_core.sandbox.alive_lock`: every sandboxed
launch holds it shared while its sandbox lives), checks again under it, and keeps it until
the call is over. When it cannot, the user is asked, and the card says why.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hermes_core.sandbox.alive_lock import UNTRACKED, Hold

if TYPE_CHECKING:
    from hermes_core.loop.prepared_calls import PreparedCall
    from hermes_core.policy.approval import ApprovalPolicy, PolicyVerdict
    from hermes_core.workspace import Workspace


def hold_for(
    item: PreparedCall, verdict: PolicyVerdict, policy: ApprovalPolicy, workspace: Workspace
) -> Hold | PolicyVerdict | None:
    """The lock, held, for a guarded call whose check still holds under it; else the
    verdict to follow instead (a question saying why). None: no sandbox here at all."""
    assert item.tool is not None and item.args is not None and verdict.request is not None
    sandbox = workspace.sandbox
    if sandbox is None:
        return None
    taken = sandbox.alive.try_exclusive() if sandbox.alive is not None else UNTRACKED
    if isinstance(taken, str):
        return _asking(verdict, taken)
    again = policy.check(item.tool, item.args, workspace, call_id=item.call.id, facts=item.facts())
    if again.action == "run" and again.guarded:
        return taken
    taken.release()  # a name or a bound file changed since: judged as any changed command is
    return again if again.action != "run" else _asking(verdict, "what it runs changed")


def _asking(verdict: PolicyVerdict, why: str) -> PolicyVerdict:
    assert verdict.request is not None
    request = verdict.request
    reason = f"{request.reason}; {why}" if request.reason else why
    return dataclasses.replace(
        verdict,
        action="ask",
        reason=reason,
        guarded=False,
        request=dataclasses.replace(request, reason=reason),
    )
