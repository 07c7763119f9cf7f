"""The watch that ends a model's stream gone stale: no item for a while -> ProviderError(STALE),
with the time the consumer spends between reads not counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from hermes_core.providers.base import ErrorKind, ProviderError
from hermes_core.providers.errors import classify

T = TypeVar("T")

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
