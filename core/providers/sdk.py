"""What the API shapes share: one endpoint's settings, a lazily built HTTP client
(core/providers/http.py), and the request body sent as it is (`open_stream`, `clean`).

The client is shared by every provider of the process that calls the same endpoint with
the same key (50 sessions, one client): one connection pool serves them all. It is closed
when the last provider using it closes (a model switch still closes the connections it
retires).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from hermes_core.messages import Growth, Message
from hermes_core.providers.base import ErrorKind, ProviderError, ToolSpec
from hermes_core.providers.body import Encoded, dumps, encode_body
from hermes_core.providers.errors import classify
from hermes_core.providers.http import OPENAI_BASE_URL, make_client, model_ids, post_stream

T = TypeVar("T")


class SdkProvider:
    api_mode: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        name: str,
        timeout: float,
        stale_seconds: float,
        extra_headers: dict[str, str] | None = None,
        api_keys: list[str] | None = None,
    ) -> None:
        self.model = model
        self.name = name
        # The credential pool: `api_key` first, then the others, each once.
        self.api_keys = list(dict.fromkeys(k for k in (api_key, *(api_keys or ())) if k))
        self.api_key = self.api_keys[0] if self.api_keys else api_key
        self.key_index = 0
        self.base_url = self._normalise_base_url(base_url)
        self.timeout = timeout
        self.stale_seconds = stale_seconds
        self.extra_headers = dict(extra_headers or {})
        self._client: Any = None
        self._client_key: tuple[Any, ...] | None = None
        self._histories: dict[Any, WireHistory] = {}  # by conversion: incremental wire forms
        self._tools_sent: tuple[tuple[Any, ...], Encoded] | None = None  # (convert, *specs), bytes

    def wire_history(
        self, messages: list[Message], key: Any, convert: Callable[[Message], list[dict[str, Any]]]
    ) -> Encoded:
        """`messages` as wire items, `convert` run (and its items encoded) only on the
        ones new since the last call."""
        history = self._histories.get(key)
        if history is None:
            history = self._histories[key] = WireHistory(key, convert)
        return history.of(messages)

    def encoded_tools(
        self, specs: list[ToolSpec], convert: Callable[[list[ToolSpec]], list[dict[str, Any]]]
    ) -> Encoded:
        """The tools' wire items (`convert`), cleaned and encoded once for as long as a call's
        specs are the very objects of the last call's: a session's tool list is made once
        and its specs cannot change (`ToolSpec` freezes its schema), so their bytes cannot
        either. Cleaning and encoding them every call was ~8% of the event loop's time with
        fifty sessions at once. Specs that are other objects are encoded afresh, even equal
        ones (`==` would take a schema's `1` for its `true`), unless another provider of the
        process sent those very objects (`_shared_tools_encoding`). `convert` must depend on
        the specs alone."""
        key = (convert, *specs)
        sent = self._tools_sent
        if sent is None or not _same_objects(sent[0], key):
            sent = self._tools_sent = (key, _shared_tools_encoding(key))
        return sent[1]

    def _normalise_base_url(self, base_url: str | None) -> str | None:
        return base_url

    def _needs_key(self) -> bool:
        """A key is required unless the endpoint is one of your own (a base URL is set)."""
        return not self.base_url

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        """The API's authentication (and version) headers."""
        raise NotImplementedError

    def _client_base_url(self) -> str:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL

    models_path = "/models"

    async def open_stream(self, path: str, params: dict[str, Any], order: tuple[str, ...]) -> Any:
        """Start a streaming call: POST `params` to `path`; the response (http.Response) once
        its headers arrived; a non-2xx status -> its ProviderError.

        The body is written here (`encode_body`: the history's part from bytes kept per
        message, the rest cleaned, `clean`, and encoded) and sent as it is.
        """
        from hermes_core.providers.sse import open_stream

        client = await self.client()
        body = encode_body({k: v if isinstance(v, Encoded) else clean(v) for k, v in params.items()}, order)
        return await open_stream(
            post_stream(client, path, body), stale_seconds=self.stale_seconds, provider=self.name
        )

    async def client(self) -> Any:
        """The HTTP client, taken from the shared ones or made on first use in a thread:
        importing aiohttp (which loads the system's certificates) is blocking disk work."""
        if self._client is None:
            if not self.api_key and self._needs_key():
                raise ProviderError(ErrorKind.AUTH, f"{self.name}: no API key configured", provider=self.name)
            key = (
                asyncio.get_running_loop(),  # a client's connections belong to one event loop
                type(self),
                self.api_key,
                self.base_url,
                self.timeout,
                tuple(sorted(self.extra_headers.items())),
            )
            client = _SHARED.take_made(key)  # another session's: no thread hop at its first call
            if client is None:
                client = await asyncio.to_thread(_SHARED.take, key, self._make_client)
            if self._client is None:
                self._client, self._client_key = client, key
            else:  # a concurrent first call won
                await _SHARED.give_back(key)
        return self._client

    def _make_client(self) -> Any:
        # A key even when there is none (local servers need none): what the SDKs sent.
        headers = self._auth_headers(self.api_key or "no-key") | self.extra_headers
        return make_client(self._client_base_url(), self.timeout, headers)

    async def rotate_key(self) -> int | None:
        """Move to the pool's next key (wrapping around); its index, or None when the pool
        has a single key. The client is rebuilt for it on the next call."""
        if len(self.api_keys) < 2:
            return None
        self.key_index = (self.key_index + 1) % len(self.api_keys)
        self.api_key = self.api_keys[self.key_index]
        await self.aclose()
        return self.key_index

    async def list_models(self) -> list[str]:
        try:
            return await model_ids(await self.client(), self.models_path)
        except ProviderError:
            raise
        except Exception as exc:
            raise classify(exc, provider=self.name) from exc

    async def aclose(self) -> None:
        if self._client_key is not None:
            key, self._client, self._client_key = self._client_key, None, None
            await _SHARED.give_back(key)


# Tool lists encoded, shared by every provider of the process: sessions offered the same
# tools hold the very same specs (`Tool.spec`), so fifty sessions starting at once encode
# them once rather than each at its first call. Keyed by the objects' ids; an entry holds
# the objects themselves, so none of its ids can be reused while it is kept.
_TOOLS_ENCODED: dict[tuple[int, ...], tuple[tuple[Any, ...], Encoded]] = {}
_TOOLS_KEPT = 32


def _same_objects(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _shared_tools_encoding(key: tuple[Any, ...]) -> Encoded:
    """The encoding of `key`'s tools (`key[0]` their conversion, the specs after it): the
    one already made for these very objects, or a new one, kept. Nothing changes an
    `Encoded` once made, and a spec's schema is frozen, so sharing it is sharing bytes."""
    ids = tuple(map(id, key))
    kept = _TOOLS_ENCODED.get(ids)
    if kept is not None and _same_objects(kept[0], key):
        return kept[1]
    convert, *specs = key
    items = clean(convert(specs))
    encoded = Encoded(items, [dumps(item) for item in items])
    if len(_TOOLS_ENCODED) >= _TOOLS_KEPT:
        del _TOOLS_ENCODED[next(iter(_TOOLS_ENCODED))]  # the oldest
    _TOOLS_ENCODED[ids] = (key, encoded)
    return encoded


def wire_form(message: Message, key: Any, convert: Callable[[Message], T]) -> T:
    """`convert(message)` cleaned (`clean`), made once per message and `key` (the API
    shape and what else the conversion depends on) and kept on the message
    (`Message.memoised`): each call converts only what the history gained since the last.
    Callers must not mutate what it returns."""
    memo = message.memo
    if memo is not None and key in memo:  # the common case, kept to a lookup
        return memo[key]
    return message.memoised(key, lambda m: clean(convert(m)))


class WireHistory:
    """A history's wire items and their encodings, extended by the forms of what it gained
    since the last call (`Growth`); rebuilt from the messages' kept forms when it did not
    just grow."""

    def __init__(self, key: Any, convert: Callable[[Message], list[dict[str, Any]]]) -> None:
        self._key = key
        self._encoded_key = ("json", key)
        self._convert = convert
        self._growth = Growth()
        self._items: list[dict[str, Any]] = []
        self._encoded: list[bytes] = []

    def of(self, messages: list[Message]) -> Encoded:
        continued, added = self._growth.added(messages)
        if not continued:
            self._items = []
            self._encoded = []
        for message in added:
            items = wire_form(message, self._key, self._convert)
            self._items.extend(items)
            self._encoded.extend(encoded_form(message, self._encoded_key, items))
        return Encoded(self._items, self._encoded)


def encoded_form(message: Message, key: Any, items: list[Any]) -> list[bytes]:
    """Each of `items` (`message`'s wire form) encoded (`dumps`), once per message and `key`,
    kept on the message beside its wire form (`Message.memoised`, same invalidation)."""
    memo = message.memo
    if memo is not None and key in memo:
        return memo[key]
    return message.memoised(key, lambda _: [dumps(item) for item in items])


# Text that cannot be sent as UTF-8 (lone surrogates: a file read with `surrogateescape`,
# a tool's broken output, half of an emoji cut by truncation) made sendable: JSON encoders
# refuse it (`surrogates not allowed`), which would fail the whole turn; a replacement
# character in its place loses one character instead.
REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; surrogate pairs (as a JSON
    decoder may leave them) joined into their character."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean(value: Any) -> Any:
    """A wire payload (dicts, lists, strings) with its strings cleaned; the same objects
    when nothing needed it, so the common case copies nothing."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        out = None
        for key, item in value.items():
            fixed = clean(item)
            if fixed is not item:
                out = dict(value) if out is None else out
                out[key] = fixed
        return value if out is None else out
    if isinstance(value, list):
        fixed_items = [clean(item) for item in value]
        if any(a is not b for a, b in zip(fixed_items, value, strict=True)):
            return fixed_items
        return value
    return value


@dataclass(slots=True)
class _Shared:
    client: Any
    users: int = 1


class _SharedClients:
    """The process's SDK clients by endpoint and key, each with the count of its users."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # taken in worker threads (take) and on the loop
        self._clients: dict[tuple[Any, ...], _Shared] = {}

    def take(self, key: tuple[Any, ...], make: Any) -> Any:
        """The client for `key`, made with `make()` when there is none (blocking: call in a
        thread; concurrent first users wait for one client instead of making one each)."""
        with self._lock:
            shared = self._clients.get(key)
            if shared is None:
                shared = self._clients[key] = _Shared(make())
            else:
                shared.users += 1
            return shared.client

    def take_made(self, key: tuple[Any, ...]) -> Any | None:
        """The client for `key` if one is made already, taken without blocking (on the
        event loop: the lock may be held by a thread making a client); None otherwise."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            shared = self._clients.get(key)
            if shared is None:
                return None
            shared.users += 1
            return shared.client
        finally:
            self._lock.release()

    async def give_back(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            shared = self._clients[key]
            shared.users -= 1
            if shared.users:
                return
            del self._clients[key]
        await shared.client.aclose()


_SHARED = _SharedClients()
