"""`/permissions`: the session's permission rules by source, trusting a project's allow
rules, and the "Always allow … in this project" answers (listed, revocable)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_acp.session.state import Session
    from hermes_core.policy.permission_rules import PermissionRules

USAGE = (
    "`/permissions` lists the rules and what is always allowed in this project; "
    "`/permissions trust` applies the project's allow rules as they are now; "
    '`/permissions revoke N` forgets an "always in this project" answer.'
)


async def permissions_command(session: Session, argument: str) -> str:
    rules = session.agent.policy.rules
    if rules is None:
        return "This session has no permission rules."
    words = argument.split()
    if not words:
        await asyncio.to_thread(rules.reload)
        return listing(rules)
    if words == ["trust"]:
        await asyncio.to_thread(rules.reload)
        # Only what the user saw listed: the model may rewrite a file (unasked in auto) between
        # the listing, or a question naming one rule, and this answer.
        unseen = rules.unseen()
        trusted = await asyncio.to_thread(rules.trust)
        if not trusted and not unseen:
            return "No project allow rules or hooks wait for your trust."
        said = ""
        if trusted:
            names = ", ".join(f"`{f.label}`" for f in trusted)
            if session.agent.hooks is not None:
                session.agent.hooks.use(rules.hook_specs())
            said = (
                f"Trusted the allow rules and hooks of {names} as they are now "
                "(a change to a file asks again).\n\n"
            )
        if unseen:
            names = ", ".join(f"`{f.label}`" for f in unseen)
            said += (
                f"Not trusted: {names}, which you have not seen as it is now (it is new or changed since "
                "`/permissions` listed it). Read it below; `/permissions trust` again trusts it as shown.\n\n"
            )
        return said + listing(rules)
    if len(words) == 2 and words[0] == "revoke" and words[1].isdigit():
        allowed = sorted(rules.project_allowed)
        number = int(words[1])
        if not 1 <= number <= len(allowed):
            return f"There is no entry {number}. " + USAGE
        scope = allowed[number - 1]
        await asyncio.to_thread(rules.revoke, scope)
        session.agent.approvals.forget(scope)
        from hermes_core.store.writer import save_turn_state

        save_turn_state(session)  # a reloaded session must not bring it back
        return f"No longer always allowed in this project: `{scope}`."
    return USAGE


def listing(rules: PermissionRules) -> str:
    from hermes_core.policy.permission_rules import describe
    from hermes_core.shell.shown import code_span

    lines = describe(rules.files) or [
        "No permission rules (`[permissions]` in config.toml, .claude/settings.json)."
    ]
    untrusted = rules.show_untrusted()
    if untrusted:
        lines += [
            "",
            "These project allow rules and hooks apply only once you trust them (`/permissions trust`):",
        ]
        for rule_file in untrusted:
            shown = [code_span(r.text) for r in rule_file.allow_rules]
            shown += [f"hook {h.event}: {code_span(h.command)}" for h in rule_file.hooks]
            lines += [f"- `{rule_file.label}`: " + ", ".join(shown)]
    allowed = sorted(rules.project_allowed)
    lines += [
        "",
        "Always allowed in this project:" if allowed else "Nothing is always allowed in this project.",
    ]
    lines += [f"{number}. `{scope}`" for number, scope in enumerate(allowed, 1)]
    return "\n".join(lines)
