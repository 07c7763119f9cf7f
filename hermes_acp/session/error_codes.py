"""Which JSON-RPC error answers an exception: `CODES`, one row per family of the engine's
hierarchy (core/errors.py), and `error_response`, which reads it.

Apart from the codes themselves (session/errors.py) because the table imports each family's
module (the config, the providers, the workspace, the store): the server's start-up and the
terminal client need the codes without them.
"""

from __future__ import annotations

from typing import Any

from acp.exceptions import RequestError

from hermes_acp.session.errors import INTERNAL_ERROR, INVALID_PARAMS, protocol_error, user_error
from hermes_core.config import ConfigError
from hermes_core.errors import HermesError, InvalidInput, ToolFailed
from hermes_core.providers.base import ProviderError
from hermes_core.store.schema import StoreError
from hermes_core.workspace import WorkspaceError

# Family -> (JSON-RPC code, whether the user must read it). The first family in the
# exception's MRO wins.
CODES: dict[type[HermesError], tuple[int, bool]] = {
    ConfigError: (INTERNAL_ERROR, True),  # the user must fix the config
    InvalidInput: (INVALID_PARAMS, False),  # the request carried it
    ProviderError: (INTERNAL_ERROR, False),
    WorkspaceError: (INTERNAL_ERROR, False),
    StoreError: (INTERNAL_ERROR, False),
    ToolFailed: (INTERNAL_ERROR, False),
    HermesError: (INTERNAL_ERROR, False),
}
UNEXPECTED = (INTERNAL_ERROR, False)  # anything else: a bug


def error_response(exc: BaseException, prefix: str = "", data: dict[str, Any] | None = None) -> RequestError:
    """The error response for an exception, its code from `CODES`; `prefix` says what failed.
    An exception naming the request field at fault (`field`) names it in `data`."""
    code, for_user = next((CODES[cls] for cls in type(exc).__mro__ if cls in CODES), UNEXPECTED)
    field = getattr(exc, "field", None)
    data = {**(data or {}), **({"field": field} if isinstance(field, str) else {})}
    message = f"{prefix}{exc}"
    if for_user:
        return user_error(code, message, data)
    return protocol_error(code, message, data or None)
