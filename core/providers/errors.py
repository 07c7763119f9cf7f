"""Where SDK failures become ProviderErrors, and where every stream is watched for going stale.

Classification works on the shape of an exception (status code, response headers, body,
class names) rather than on SDK classes, so this module never imports `openai`,
`anthropic` or their HTTP library.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar

from core.providers.base import ErrorKind, ProviderError

T = TypeVar("T")
logger = logging.getLogger(__name__)

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
_CONNECTION_CLASSES = {
    "APIConnectionError",
    "APITimeoutError",
    "TransportError",  # httpx: connect/read errors, a peer that closed mid-body
    "TimeoutException",
    "StreamError",
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
    if "APIError" in names:  # a stream-level error without a status or code
        return ProviderError(ErrorKind.TRANSIENT, message, provider=provider)
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
    from core.providers.limits import says_invalid_signature, stated_context_limit, stated_output_cap

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


END = object()  # what StaleWatch.read returns when the stream ended


class StaleWatch:
    """Reads one stream piece by piece; no item for `stale_seconds` -> ProviderError(STALE).

    The window starts at creation and again at each `restart()`; the time a consumer
    spends between reads does not count. One timer serves the whole stream and only
    moves on when it fires early: a timeout scope armed and cancelled around every read
    (`asyncio.timeout`) costs more than parsing the SSE event the read brings.
    """

    def __init__(self, *, stale_seconds: float, provider: str) -> None:
        self.stale_seconds = stale_seconds
        self.provider = provider
        self._loop = asyncio.get_running_loop()
        self._deadline = self._loop.time() + stale_seconds
        self._timer: asyncio.TimerHandle | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task inside read(), if any
        self._fired = False

    def restart(self) -> None:
        """An item arrived and was handled: the stale window starts again now."""
        self._deadline = self._loop.time() + self.stale_seconds

    async def read(self, iterator: AsyncIterator[T]) -> T | object:
        """The next item, or END. Any SDK or HTTP failure -> its ProviderError."""
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        self._reader = task
        if self._timer is None:
            self._timer = self._loop.call_at(self._deadline, self._check)
        try:
            return await anext(iterator)
        except StopAsyncIteration:
            return END
        except asyncio.CancelledError as exc:
            if self._take_back(task) and task.cancelling() <= cancelling:  # ours alone
                raise self._stale() from exc
            raise
        except ProviderError:
            raise
        except Exception as exc:  # an HTTP layer may turn our cancel into its own error
            raise (self._stale() if self._take_back(task) else classify(exc, provider=self.provider)) from exc
        finally:
            self._reader = None
            if self._fired:  # a cancel some layer swallowed must not outlive the read
                self._take_back(task)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self._reader is None:
            return  # the consumer is busy; the next read arms the timer again
        if self._loop.time() < self._deadline:
            self._timer = self._loop.call_at(self._deadline, self._check)
            return
        self._fired = True
        self._reader.cancel()

    def _stale(self) -> ProviderError:
        message = f"no data for {self.stale_seconds:g}s: the stream stalled"
        return ProviderError(ErrorKind.STALE, message, provider=self.provider)

    def _take_back(self, task: asyncio.Task[Any]) -> bool:
        """Withdraw this watch's cancel request, if it made one."""
        if not self._fired:
            return False
        self._fired = False
        task.uncancel()
        return True


async def close_quietly(*closables: Any) -> None:
    """Close SDK streams and iterators, ignoring errors from already-broken connections."""
    for closable in closables:
        close = getattr(closable, "aclose", None) or getattr(closable, "close", None)
        if close is None:
            continue
        try:
            await close()
        except Exception:  # closing a dead connection may complain; nothing left to do
            logger.debug("closing a stream failed", exc_info=True)


async def open_stream(call: Any, *, stale_seconds: float, provider: str) -> Any:
    """Await an SDK `create(stream=True)` call (it returns once headers arrived), translating
    failures and giving up after `stale_seconds` without a response."""
    try:
        async with asyncio.timeout(stale_seconds) as deadline:
            return await call
    except TimeoutError as exc:
        if deadline.expired():
            raise ProviderError(
                ErrorKind.STALE, f"no response for {stale_seconds:g}s", provider=provider
            ) from exc
        raise classify(exc, provider=provider) from exc
    except ProviderError:
        raise
    except Exception as exc:
        raise classify(exc, provider=provider) from exc


def untransformed(
    params: dict[str, Any], *, bulky: tuple[str, ...], placeholders: dict[str, Any]
) -> dict[str, Any]:
    """`params` for an SDK `create()` with its bulky, already wire-shaped parts moved to
    `extra_body`.

    The SDKs walk every request parameter against their TypedDicts before sending
    (`async_maybe_transform`): on a long history that costs ~3 ms per message and call,
    for JSON we built in wire shape already. `extra_body` (public API) is merged into
    the body after that walk, so those parts go out as they are; `placeholders` stand
    in for required parameters meanwhile. Text that is not valid Unicode is cleaned here,
    on its way out, instead of failing the request (core/providers/encoding.py).
    """
    from core.providers.encoding import clean

    out = dict(clean(params))
    extra = dict(out.pop("extra_body", None) or {})
    for key in bulky:
        if key in out:
            extra[key] = out.pop(key)
            if key in placeholders:
                out[key] = placeholders[key]
    if extra:
        out["extra_body"] = extra
    return out
