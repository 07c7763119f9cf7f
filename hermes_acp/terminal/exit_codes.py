"""What `hermes-acp run` exits with; the README's table lists the same."""

from __future__ import annotations

OK = 0  # the turn ended normally (end_turn)
ERROR = 1  # the turn or the server failed (model error, protocol error)
USAGE = 2  # bad arguments: unknown model or effort, unreadable @file, empty prompt
CONFIG = 3  # no API key, or a broken config file
REFUSED = 4  # the model refused
LIMIT = 5  # max_tokens or max_turn_requests: the turn was cut short
NEEDS_APPROVAL = 6  # the turn ended, but something asked for approval and nobody could give it
CANCELLED = 130  # Ctrl-C (SIGINT) cancelled the turn; 128 + SIGINT, as shells do

BY_STOP_REASON = {
    "end_turn": OK,
    "refusal": REFUSED,
    "max_tokens": LIMIT,
    "max_turn_requests": LIMIT,
    "cancelled": CANCELLED,
}


def for_stop_reason(stop_reason: str, rejected_approvals: int) -> int:
    code = BY_STOP_REASON.get(stop_reason, ERROR)
    if code == OK and rejected_approvals:
        return NEEDS_APPROVAL
    return code
