"""The model a conversation talks to: its provider chain (built on first use), retries and
fallback around it, a switch to another model, and what a call cost at its prices."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

from hermes_core.config import Settings
from hermes_core.models import Usage
from hermes_core.providers.base import ModelRequest, Provider

log = logging.getLogger(__name__)


class ModelLink:
    def __init__(self, settings: Settings, model: str, providers: list[Provider] | None = None) -> None:
        self._settings = settings
        self._model = model
        self._providers = providers  # None: built from the settings on first use
        self._retired: list[Provider] = []  # replaced by a switch; closed by close_retired()
        self._resilient: Any = None

    @property
    def name(self) -> str:
        return self._model

    def switch(self, model: str) -> None:
        """The next call goes to `model`; the old providers close at the next turn."""
        if model != self._model:
            self._model = model
            self._retired.extend(self._providers or [])
            self._providers = None
            self._resilient = None

    @property
    def providers(self) -> list[Provider]:
        if self._providers is None:
            from hermes_core.providers.resolve import build_chain

            self._providers = build_chain(self._settings, self._model)
        return self._providers

    @property
    def context_window(self) -> int:
        from hermes_core.models import context_window

        return context_window(self._model, self._settings.context_windows)

    def accepts_images(self) -> bool:
        from hermes_core.models import model_info

        return model_info(self._model).images

    def stream(self, request: ModelRequest) -> AsyncGenerator[Any, None]:
        if self._resilient is None:
            from hermes_core.providers.resilient import ResilientModel

            settings = self._settings
            self._resilient = ResilientModel(
                self.providers,
                max_retries=settings.max_retries,
                base_delay=settings.retry_base_seconds,
                cap_delay=settings.retry_cap_seconds,
            )
        stream: AsyncGenerator[Any, None] = self._resilient.stream(request)
        return stream

    def new_turn(self) -> None:
        """A fallback carries a turn to its end, not the next one."""
        if self._resilient is not None:
            self._resilient.reset()

    def cost(self, usage: Usage) -> float | None:
        """What `usage` cost at the configured price of this model (None: no price known)."""
        from hermes_core.models import cost_usd, normalise

        prices = self._settings.prices
        price = prices.get(self._model) or prices.get(normalise(self._model))
        return cost_usd(usage, price) if price is not None else None

    async def close_retired(self) -> None:
        """Close the provider clients (their connection pools) a switch replaced."""
        retired, self._retired = self._retired, []
        for provider in retired:
            try:
                await provider.aclose()
            except Exception:  # closing is best effort; the others still get closed
                log.debug("closing a retired provider failed", exc_info=True)

    async def aclose(self) -> None:
        await self.close_retired()
        for provider in self._providers or []:
            with contextlib.suppress(Exception):
                await provider.aclose()
