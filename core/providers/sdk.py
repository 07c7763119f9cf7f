"""What the three API shapes share: one endpoint's settings and a lazily built SDK client."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from core.providers.base import ErrorKind, ProviderError
from core.providers.errors import classify


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

    def _normalise_base_url(self, base_url: str | None) -> str | None:
        return base_url

    def _needs_key(self) -> bool:
        """A key is required unless the endpoint is one of your own (a base URL is set)."""
        return not self.base_url

    def _sdk_client_class(self) -> Any:
        """The SDK's async client class (importing the SDK: call off the event loop)."""
        raise NotImplementedError

    async def client(self) -> Any:
        """The SDK client, made on first use in a thread: importing the SDK and loading the
        system's certificates is blocking disk work."""
        if self._client is None:
            client = await asyncio.to_thread(self._make_client)
            if self._client is None:  # a concurrent first call may have won
                self._client = client
        return self._client

    def _make_client(self) -> Any:
        if not self.api_key and self._needs_key():
            raise ProviderError(ErrorKind.AUTH, f"{self.name}: no API key configured", provider=self.name)
        return self._sdk_client_class()(
            # Explicit even when empty: local servers need no key, the SDKs insist on one,
            # and an explicit key stops them reading the environment or a profile.
            api_key=self.api_key or "no-key",
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,  # we retry ourselves (core/providers/resilient.py)
            default_headers=self.extra_headers or None,
        )

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
            return [m.id async for m in (await self.client()).models.list()]
        except ProviderError:
            raise
        except Exception as exc:
            raise classify(exc, provider=self.name) from exc

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
