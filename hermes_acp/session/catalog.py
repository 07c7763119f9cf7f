"""The models an endpoint lists, fetched once per endpoint and shared by its sessions."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.config import Settings

log = logging.getLogger(__name__)

MODEL_LIST_TIMEOUT = 10.0
MODEL_LIST_RETRY_SECONDS = 300.0  # an endpoint without a model list is asked again after this


class ModelCatalog:
    """The endpoint's model list, fetched once per endpoint and shared by its sessions.
    An endpoint that gave no list is asked again only after a while."""

    def __init__(self, retry_after: float = MODEL_LIST_RETRY_SECONDS) -> None:
        self._lists: dict[tuple[str, ...], tuple[list[str], float]] = {}
        self._fetching: dict[tuple[str, ...], asyncio.Task[list[str]]] = {}
        self._retry_after = retry_after

    @staticmethod
    def _key(settings: Settings) -> tuple[str, ...]:
        return (
            settings.provider,
            settings.base_url or "",
            settings.openai_base_url or "",
            settings.anthropic_base_url or "",
        )

    def known(self, settings: Settings) -> list[str]:
        """The list fetched in this run, else the one an earlier run kept under the home."""
        from core.providers.model_list import cached_models

        return self._lists.get(self._key(settings), ([], 0.0))[0] or cached_models(settings)

    async def fetch(self, settings: Settings) -> list[str]:
        key = self._key(settings)
        cached = self._lists.get(key)
        if cached is not None and (cached[0] or time.monotonic() - cached[1] < self._retry_after):
            return cached[0]
        task = self._fetching.get(key)
        if task is None:
            task = self._fetching[key] = asyncio.create_task(_list_models(settings))
        try:
            models = await asyncio.shield(task)
        finally:
            if task.done():
                self._fetching.pop(key, None)
        self._lists[key] = (models, time.monotonic())
        return models


async def _list_models(settings: Settings) -> list[str]:
    from core.providers.resolve import build_chain

    provider = None
    try:
        provider = build_chain(settings)[0]
        models = await asyncio.wait_for(provider.list_models(), MODEL_LIST_TIMEOUT)
        listed = [m for m in models if isinstance(m, str) and m]
        from core.providers.model_list import remember_models

        await asyncio.to_thread(remember_models, settings, listed)
        return listed
    except Exception as exc:  # a missing list is normal (many endpoints have none)
        log.info("no model list from the endpoint: %s", exc)
        return []
    finally:
        if provider is not None:
            try:
                await provider.aclose()
            except Exception:
                log.debug("closing the model-list client failed", exc_info=True)


def model_takes_effort(model: str) -> bool:
    from core.models import model_info

    return model_info(model).reasoning in ("effort", "thinking")
