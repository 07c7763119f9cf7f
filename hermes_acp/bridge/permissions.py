"""Core approval requests -> `session/request_permission`, and the user's answer back.

The approver only asks and translates; remembering "always" answers is the policy's
job (`hermes_core.policy.approval.ApprovalMemory`), which sees the Decision this returns.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from acp.exceptions import RequestError

from hermes_acp.bridge.channel import ClientChannel
from hermes_acp.bridge.remote_images import defuse
from hermes_acp.bridge.tool_cards import fence, text_content
from hermes_core.policy.approval import ApprovalRequest, Decision
from hermes_core.shell.shown import shown, shown_block, undrawn_lines
from hermes_core.tools.files import EDITS

log = logging.getLogger(__name__)

_DECISIONS = {
    "allow_once": Decision.ALLOW_ONCE,
    "allow_always": Decision.ALLOW_ALWAYS,
    "reject_once": Decision.REJECT_ONCE,
    "reject_always": Decision.REJECT_ALWAYS,
    "allow_project": Decision.ALLOW_PROJECT,
}


class AcpApprover:
    """Asks the editor's user, on the card the tool call already shows."""

    def __init__(self, channel: ClientChannel, session_id: str) -> None:
        self._channel = channel
        self._session_id = session_id

    async def decide(self, request: ApprovalRequest) -> Decision:
        params = permission_params(self._session_id, request)
        offered = {option["optionId"] for option in params["options"]}
        try:
            response = await self._channel.send_request("session/request_permission", params)
        except (RequestError, ConnectionError) as exc:
            # CancelledError (session/cancel) is not caught: it ends the turn.
            log.warning("permission request for %s failed (%s); rejecting", request.call_id, exc)
            return Decision.REJECT_ONCE
        outcome = response.get("outcome") if isinstance(response, dict) else None
        if not isinstance(outcome, dict):
            outcome = {}
        kind = outcome.get("outcome")
        if kind == "cancelled":
            return Decision.CANCELLED
        if kind == "selected":
            option_id = outcome.get("optionId")
            if isinstance(option_id, str) and option_id in offered:
                return _DECISIONS[option_id]
            log.warning(
                "client chose option %r for %s, which was not offered (%s); rejecting",
                option_id,
                request.call_id,
                ", ".join(sorted(offered)),
            )
            return Decision.REJECT_ONCE
        log.warning("malformed permission response for %s: %r; rejecting", request.call_id, response)
        return Decision.REJECT_ONCE


def permission_params(session_id: str, request: ApprovalRequest) -> dict[str, Any]:
    """The `session/request_permission` params for one request."""
    # A tool's own title is escaped already, an MCP tool's may not be; an editor may render
    # it as Markdown: no image in it loads.
    title = defuse(shown(request.title))
    if request.sandbox == "sandboxed":
        title += " (sandboxed)"
    elif request.sandbox == "unconfined":
        title += " (runs outside the sandbox)"
    if request.dangerous:
        title = f"⚠ Dangerous: {request.rule} — {title}"
    subject = _scope_label(request.scope)
    options = [_option("allow_once", "Allow once")]
    if request.offers_always:
        # A dangerous command is judged every time; "always" would silence the rule. An
        # unconfined command whose files cannot be pinned gets none either.
        options.append(_option("allow_always", f"Always allow {subject}"))
        if request.offers_project:
            # Kept in the agent's home for this project's later sessions (`/permissions`).
            label = f"Always allow {_project_label(request.scope)} in this project"
            options.append({"optionId": "allow_project", "name": shown(label), "kind": "allow_always"})
    options.append(_option("reject_once", "Reject"))
    options.append(_option("reject_always", f"Always reject {subject}"))
    hermes: dict[str, Any] = {"reason": request.reason, "scope": request.scope}
    if request.rule:
        hermes["rule"] = request.rule
    if request.outside_paths:
        hermes["outsidePaths"] = list(request.outside_paths)
    if request.sandbox is not None:
        hermes["sandboxed"] = request.sandbox == "sandboxed"
    tool_call: dict[str, Any] = {
        "toolCallId": request.call_id,
        "title": title,
        "kind": request.kind,
        "status": "pending",
        "rawInput": request.arguments,
    }
    if request.diff is not None:  # the user sees the change before deciding on it
        diff = request.diff
        tool_call["content"] = [
            {"type": "diff", "path": diff.path, "oldText": diff.old_text, "newText": diff.new_text}
        ]
        if note := _undrawn_note(diff.path, diff.new_text):
            # The editor draws the diff's bytes as they are: bidi controls reorder a line,
            # a lone `\r` breaks one. What it cannot draw faithfully is said, escaped.
            tool_call["title"] = f"{title} (holds characters the diff cannot draw: see below)"
            tool_call["content"].append(text_content(note))
    elif isinstance(command := request.arguments.get("command"), str):
        # The title is one line and cut; the command decided on is shown whole, escaped,
        # with no run of blanks that would push its tail out of sight.
        tool_call["content"] = [text_content(fence(shown_block(command)))]
    elif not _all_in(request.arguments, title):
        # A title is cut (an MCP call's arguments at 80 characters, a memory's text at 80):
        # what the user decides on is shown whole below it, as the tool gets it.
        arguments = json.dumps(request.arguments, indent=2, ensure_ascii=False)
        tool_call["content"] = [text_content(fence(shown_block(arguments)))]
    return {
        "sessionId": session_id,
        "toolCall": tool_call,
        "options": options,
        "_meta": {"hermes": hermes},
    }


def _all_in(arguments: Any, title: str) -> bool:
    """Whether every string in `arguments` reads whole in `title` (numbers and flags are
    the tool's to word)."""
    if isinstance(arguments, str):
        return shown(arguments) in title
    if isinstance(arguments, dict):
        return all(_all_in(value, title) for value in arguments.values())
    if isinstance(arguments, list):
        return all(_all_in(value, title) for value in arguments)
    return True


def _undrawn_note(path: str, new_text: str) -> str | None:
    """What of an edit's path and new text an editor would draw otherwise than it is."""
    parts: list[str] = []
    if undrawn_lines(path):
        parts.append(f"The path holds characters that draw as nothing or as a space: {shown(path)}")
    if lines := undrawn_lines(new_text):
        listed = "\n".join(f"{number}: {line}" for number, line in lines)
        parts.append(
            "These lines of the new text hold characters an editor draws as nothing, reorders "
            "or breaks the line on (escaped here):\n" + fence(listed)
        )
    return "\n\n".join(parts) or None


def _scope_label(scope: str) -> str:
    """What an "always" answer covers, in the user's words: "edits" -> "edits in this
    session", "edits in /etc" -> "edits in /etc in this session", "terminal:git status"
    -> "`git status`", another tool -> "`its name` in this session"."""
    if scope == EDITS or scope.startswith(f"{EDITS} in "):
        return f"{scope} in this session"
    if ":" not in scope:
        quoted = scope.replace("`", "'")
        return f"`{quoted}` in this session"
    _, _, subject = scope.partition(":")
    subject = (subject or scope).strip() or scope
    subject = subject.replace("`", "'")
    return f"`{subject}`"


def _project_label(scope: str) -> str:
    if scope == EDITS or ":" not in scope:
        return scope.replace("`", "'") if scope == EDITS else f"`{scope.replace('`', chr(39))}`"
    return _scope_label(scope)


def _option(option_id: str, name: str) -> dict[str, str]:
    # The optionId doubles as the kind (allow_project, an allow_always too, is the one exception).
    return {"optionId": option_id, "name": shown(name), "kind": option_id}
