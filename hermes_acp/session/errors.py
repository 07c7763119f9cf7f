"""The JSON-RPC errors the session layer answers with, and their messages.

An exception becomes an error response through `error_codes.error_response`; this module
loads none of the engine's error families, so start-up and the terminal client can have the
codes alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

if TYPE_CHECKING:
    from hermes_core.config import Settings

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = -32002
ALREADY_RUNNING = "a prompt is already running in this session; cancel it first"


def protocol_error(code: int, message: str, data: Any = None) -> RequestError:
    return RequestError(code, message, data)


def user_error(code: int, message: str, data: dict[str, Any] | None = None) -> RequestError:
    """An error the user must read and act on (no key, a bad setting). Some clients (Toad)
    show only `error.data.details`, so the message is there too; and it goes to the log."""
    log.error("%s", message)
    return RequestError(code, message, {**(data or {}), "details": message})


def not_found(session_id: str) -> RequestError:
    return protocol_error(SESSION_NOT_FOUND, f"unknown session {session_id!r}", {"sessionId": session_id})


def auth_help(settings: Settings) -> str:
    return (
        "No API key configured for hermes-acp. Run `hermes-acp setup` in a terminal, or set "
        "OPENAI_API_KEY (or ANTHROPIC_API_KEY / OPENROUTER_API_KEY, or HERMES_ACP_API_KEY with "
        f"HERMES_ACP_BASE_URL for another endpoint) in the environment or in {settings.config_path}."
    )
