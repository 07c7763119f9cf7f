"""The JSON-RPC errors the session layer answers with, and their messages.

An exception becomes an error response through `error_response`, which reads its code
from `CODES`: one row per family of core/errors.py's hierarchy.
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

# Family -> (JSON-RPC code, whether the user must read it). The first family in the
# exception's MRO wins. Keyed by name so this module loads none of the families' modules
# (the store, the providers): the terminal client imports it for the codes alone.
CODES: dict[str, tuple[int, bool]] = {
    "hermes_core.config.ConfigError": (INTERNAL_ERROR, True),  # the user must fix the config
    "hermes_core.errors.InvalidInput": (INVALID_PARAMS, False),  # the request carried it
    "hermes_core.providers.base.ProviderError": (INTERNAL_ERROR, False),
    "hermes_core.workspace.WorkspaceError": (INTERNAL_ERROR, False),
    "hermes_core.store.schema.StoreError": (INTERNAL_ERROR, False),
    "hermes_core.errors.ToolFailed": (INTERNAL_ERROR, False),
    "hermes_core.errors.HermesError": (INTERNAL_ERROR, False),
}
UNEXPECTED = (INTERNAL_ERROR, False)  # anything else: a bug


def protocol_error(code: int, message: str, data: Any = None) -> RequestError:
    return RequestError(code, message, data)


def user_error(code: int, message: str, data: dict[str, Any] | None = None) -> RequestError:
    """An error the user must read and act on (no key, a bad setting). Some clients (Toad)
    show only `error.data.details`, so the message is there too; and it goes to the log."""
    log.error("%s", message)
    return RequestError(code, message, {**(data or {}), "details": message})


def error_response(exc: BaseException, prefix: str = "", data: dict[str, Any] | None = None) -> RequestError:
    """The error response for an exception, its code from `CODES`; `prefix` says what failed.
    An exception naming the request field at fault (`field`) names it in `data`."""
    code, for_user = next(
        (CODES[name] for name in map(_qualified_name, type(exc).__mro__) if name in CODES), UNEXPECTED
    )
    field = getattr(exc, "field", None)
    data = {**(data or {}), **({"field": field} if isinstance(field, str) else {})}
    message = f"{prefix}{exc}"
    if for_user:
        return user_error(code, message, data)
    return protocol_error(code, message, data or None)


def _qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def not_found(session_id: str) -> RequestError:
    return protocol_error(SESSION_NOT_FOUND, f"unknown session {session_id!r}", {"sessionId": session_id})


def auth_help(settings: Settings) -> str:
    return (
        "No API key configured for hermes-acp. Run `hermes-acp setup` in a terminal, or set "
        "OPENAI_API_KEY (or ANTHROPIC_API_KEY / OPENROUTER_API_KEY, or HERMES_ACP_API_KEY with "
        f"HERMES_ACP_BASE_URL for another endpoint) in the environment or in {settings.config_path}."
    )
