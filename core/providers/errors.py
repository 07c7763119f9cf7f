"""Where SDK failures become ProviderErrors, and where every stream is watched for going stale.

Classification works on the shape of an exception (status code, response headers, body,
class names) rather than on SDK classes, so this module never imports `openai`,
`anthropic` or their HTTP library.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

from hermes_core.providers.base import ErrorKind, ProviderError

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|context limit"
    r"|prompt is too long|too many tokens|input is too long|exceeds? the (?:model'?s? )?(?:maximum )?context"
    r"|reduce the length of the (?:messages|input|prompt)|model_context_window_exceeded"
    r"|request too large for model|prompt too long|tokens? (?:limit )?exceed",
    re.IGNORECASE,
)
_OVERFLOW_CODES = {"context_length_exceeded", "model_context_window_exceeded", "request_too_large"}
_RATE_LIMIT_TYPES = {"rate_limit_error", "rate_limit_exceeded", "overloaded_error", "overloaded"}
_AUTH_CODES = {"invalid_api_key", "insufficient_quota", "authentication_error", "permission_error"}
# What the providers' HTTP (aiohttp, core/providers/http.py) raises when the connection
# fails; Bedrock's botocore errors are classified in bedrock.py, and MCP over HTTP (httpx2)
# never comes here.
_CONNECTION_CLASSES = {
    "ClientConnectionError",  # refused, reset, a peer that closed before answering
    "ClientPayloadError",  # a body cut short (mid-stream disconnect, bad chunking)
}


def is_context_overflow(message: str | None, code: str | None = None) -> bool:
    if code and code.lower() in _OVERFLOW_CODES:
        return True
    return bool(message and _OVERFLOW.search(message))


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait, from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def classify(exc: BaseException, *, provider: str) -> ProviderError:
    """Turn whatever a provider SDK raised into a ProviderError."""
    if isinstance(exc, ProviderError):
        return exc
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    message, code, err_type = _error_details(exc)
    if isinstance(status, int) and status >= 400:
        headers = getattr(response, "headers", None)
        return _from_status(status, message, code, err_type, provider, parse_retry_after(headers))
    if code or err_type:  # an error event inside a stream that began with 200
        return classify_payload(code or err_type, message, provider=provider)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _CONNECTION_CLASSES or isinstance(exc, (ConnectionError, TimeoutError)):
        cause = exc.__cause__ or exc.__context__
        detail = f"{message} ({cause})" if cause is not None and str(cause) not in message else message
        return ProviderError(ErrorKind.TRANSIENT, f"connection failed: {detail}", provider=provider)
    return ProviderError(ErrorKind.FATAL, f"{type(exc).__name__}: {message}", provider=provider)


def classify_payload(code: str | None, message: str, *, provider: str) -> ProviderError:
    """An error reported inside a stream (Responses `response.failed`, an `error` event)."""
    return with_hints(_classify_payload(code, message, provider=provider), message)


def _classify_payload(code: str | None, message: str, *, provider: str) -> ProviderError:
    lowered = (code or "").lower()
    if is_context_overflow(message, lowered):
        return ProviderError(ErrorKind.CONTEXT_OVERFLOW, message, provider=provider)
    if lowered in _RATE_LIMIT_TYPES or "overloaded" in message.lower():
        return ProviderError(ErrorKind.RATE_LIMIT, message, provider=provider)
    if lowered in _AUTH_CODES:
        return ProviderError(ErrorKind.AUTH, message, provider=provider)
    if lowered in ("invalid_request_error", "invalid_prompt", "not_found_error"):
        return ProviderError(ErrorKind.BAD_REQUEST, message, provider=provider)
    return ProviderError(ErrorKind.TRANSIENT, message or "the provider reported an error", provider=provider)


def classify_stream_error(error: Any, *, provider: str) -> ProviderError:
    """An error object sent inside a stream that began with 200 (an OpenAI `{"error": ...}`
    data line, an Anthropic `error` event, a failed Response): its code, else its type,
    decides. Codes may be numbers (OpenRouter sends HTTP statuses there)."""
    if not isinstance(error, Mapping):
        return classify_payload(None, str(error or ""), provider=provider)
    code = error.get("code") or error.get("type")
    label = str(code) if code else None
    message = error.get("message")
    text = str(message) if message else (f"the provider reported {label}" if label else "")
    return classify_payload(label, text, provider=provider)


def from_status(
    status: int, message: str, code: str | None, err_type: str | None, provider: str
) -> ProviderError:
    """An HTTP error status (and its body's code and type) as a ProviderError."""
    return _from_status(status, message, code, err_type, provider, None)


def _from_status(
    status: int,
    message: str,
    code: str | None,
    err_type: str | None,
    provider: str,
    retry_after: float | None,
) -> ProviderError:
    def error(kind: ErrorKind) -> ProviderError:
        text = f"HTTP {status}: {message}"
        made = ProviderError(kind, text, status=status, retry_after=retry_after, provider=provider)
        return with_hints(made, message)

    if status == 429:
        # Quota, not pace: waiting does not help, another endpoint might.
        return error(ErrorKind.AUTH if code == "insufficient_quota" else ErrorKind.RATE_LIMIT)
    if status == 529 or err_type == "overloaded_error" or (status == 503 and "overload" in message.lower()):
        return error(ErrorKind.RATE_LIMIT)
    if status == 413 or is_context_overflow(message, code):
        return error(ErrorKind.CONTEXT_OVERFLOW)
    if status in (401, 403):
        return error(ErrorKind.AUTH)
    if status in (408, 409) or status >= 500:
        return error(ErrorKind.TRANSIENT)
    return error(ErrorKind.BAD_REQUEST)


def with_hints(error: ProviderError, message: str) -> ProviderError:
    """Note what the message tells about the endpoint's limits, for the recovery levels in
    core/providers/resilient.py."""
    from hermes_core.providers.limits import says_invalid_signature, stated_context_limit, stated_output_cap

    error.output_cap = stated_output_cap(message)
    if error.kind is ErrorKind.CONTEXT_OVERFLOW or error.output_cap is not None:
        error.context_limit = stated_context_limit(message)
    if error.kind is ErrorKind.BAD_REQUEST:
        error.invalid_signature = says_invalid_signature(message)
    return error


def _error_details(exc: BaseException) -> tuple[str, str | None, str | None]:
    """(message, code, type) from an SDK exception and its body, in either API's shape."""
    body: Any = getattr(exc, "body", None)
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        inner = body if isinstance(body, dict) else {}
    message = inner.get("message") or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    code = inner.get("code") or getattr(exc, "code", None)
    err_type = inner.get("type") or None
    return str(message), (str(code) if code else None), (str(err_type) if err_type else None)
