"""Retries, backoff and fallback over an ordered chain of providers.

Recovery, in this order (the README's "Recovery order" lists the same):

1. A refused key (429/402/403) on a provider with a credential pool: the next key, at once.
2. An error stating the output tokens still available: that call again with `max_tokens`
   lowered to them.
3. A 400 rejecting replayed reasoning (an invalid signature): the call again once, with
   the replayed reasoning stripped from the history.
4. A retryable failure (rate limit, transient, stale stream): the same provider again,
   with full-jitter exponential backoff.
5. A context overflow: the limit it states is learned (core/providers/limits.py) and the
   error goes back to the caller, which compresses and tries again.
6. When retries run out, or at once for auth and bad request errors, the next provider in
   the chain takes over and keeps the job for the rest of the turn (`reset()` goes back
   to the primary).

Text already streamed to the consumer is not repeated: a retry's deltas that re-produce
what was already shown are swallowed, and only what is new goes on. A retry whose answer
departs from what was shown yields `AnswerRestarted`, then its whole answer so far: the
consumer drops the partial text instead of gluing the two together.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace

from hermes_core.events import AnswerRestarted, Status, TextDelta, ThoughtDelta
from hermes_core.messages import Message
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, Provider, ProviderError

logger = logging.getLogger(__name__)

ResilientItem = TextDelta | ThoughtDelta | ModelResponse | Status | AnswerRestarted


class _Echo:
    """What one kind of delta (text or thought) already showed, and how far a retry got."""

    def __init__(self) -> None:
        self.shown = ""
        self.produced = ""
        self.diverged = False

    def restart(self) -> None:
        self.produced = ""
        self.diverged = False

    def departs(self, delta: str) -> bool:
        """Whether `delta` takes the retry away from the text already shown (so the shown
        text must be dropped, not continued)."""
        if self.diverged or len(self.produced) >= len(self.shown):
            return False
        produced = self.produced + delta
        return not (self.shown.startswith(produced) or produced.startswith(self.shown))

    def restart_shown(self) -> str:
        """Drop what was shown; the retry's text so far is what is shown now."""
        self.diverged = True
        self.shown = self.produced
        return self.produced

    def new_part(self, delta: str) -> str:
        """The part of `delta` the consumer has not seen yet."""
        before = self.produced
        self.produced += delta
        if self.diverged or len(before) >= len(self.shown):
            fresh = delta
        elif self.shown.startswith(self.produced):
            fresh = ""  # still inside the already-shown prefix
        elif self.produced.startswith(self.shown):
            fresh = self.produced[len(self.shown) :]
        else:
            self.diverged = True  # the retry says something else: nothing to hide any more
            fresh = delta
        self.shown += fresh
        return fresh


@dataclass(slots=True)
class _Recoveries:
    """The one-off recovery levels already spent on one `stream()` call."""

    rotations: dict[int, int] = field(default_factory=dict)  # chain index -> keys tried
    output_capped: bool = False
    reasoning_stripped: bool = False


class ResilientModel:
    def __init__(
        self,
        chain: list[Provider],
        *,
        max_retries: int,
        base_delay: float,
        cap_delay: float,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not chain:
            raise ValueError("ResilientModel needs at least one provider")
        self.chain = list(chain)
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.cap_delay = cap_delay
        self._sleep = sleep
        self._rng = rng
        self.index = 0

    @property
    def current(self) -> Provider:
        """The provider that answered last (or will be asked next)."""
        return self.chain[self.index]

    def reset(self) -> None:
        """Back to the primary provider (at the start of a turn)."""
        self.index = 0

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Full jitter: random in [0, base * 2^attempt], capped; a server's retry-after is a
        floor, but never above the cap."""
        delay = self._rng() * min(self.cap_delay, self.base_delay * 2**attempt)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.cap_delay)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ResilientItem, None]:
        text, thought = _Echo(), _Echo()
        last_error: ProviderError | None = None
        spent = _Recoveries()
        while self.index < len(self.chain):
            provider = self.current
            attempt = 0
            while True:
                text.restart()
                thought.restart()
                try:
                    async with aclosing(provider.stream(request)) as items:
                        async for item in items:
                            if isinstance(item, TextDelta):
                                if text.departs(item.text):
                                    yield AnswerRestarted(text.shown)
                                    if text.restart_shown():
                                        yield TextDelta(text.produced)
                                fresh = text.new_part(item.text)
                                if fresh:
                                    yield TextDelta(fresh)
                            elif isinstance(item, ThoughtDelta):
                                fresh = thought.new_part(item.text)
                                if fresh:
                                    yield ThoughtDelta(fresh)
                            else:
                                if isinstance(item, ModelResponse) and text.shown != text.produced:
                                    # The retry's answer stopped short of what was shown.
                                    yield AnswerRestarted(text.shown)
                                    if text.restart_shown():
                                        yield TextDelta(text.produced)
                                yield item
                                if isinstance(item, ModelResponse):
                                    return
                    raise ProviderError(
                        ErrorKind.TRANSIENT, "the stream ended without a response", provider=provider.name
                    )
                except ProviderError as error:
                    last_error = error
                    recovery = await self._recover(provider, request, error, spent)
                    if recovery is not None:
                        request, status = recovery
                        yield status
                        continue
                    if error.kind is ErrorKind.CONTEXT_OVERFLOW:
                        if (learned := self._learn_context_limit(provider, error)) is not None:
                            yield learned
                        raise
                    logger.info("%s failed (%s): %s", _label(provider), error.kind, error)
                    if not error.retryable or attempt >= self.max_retries:
                        break
                    delay = self.backoff(attempt, error.retry_after)
                    attempt += 1
                    yield Status(
                        kind="retrying",
                        message=(
                            f"{_label(provider)}: {_describe(error)}; retrying in {delay:.1f}s "
                            f"(attempt {attempt} of {self.max_retries})"
                        ),
                        detail={
                            "attempt": attempt,
                            "attempts": self.max_retries,
                            "delay": delay,
                            "error": str(error),
                            "kind": str(error.kind),
                        },
                    )
                    await self._sleep(delay)
            if self.index + 1 < len(self.chain):
                old, new = provider, self.chain[self.index + 1]
                yield Status(
                    kind="falling_back",
                    message=f"{_label(old)} failed ({_describe(last_error)}); falling back to {_label(new)}",
                    detail={"from": _label(old), "to": _label(new), "error": str(last_error)},
                )
            self.index += 1
        self.index = 0  # every provider failed: a later call starts over from the primary
        assert last_error is not None
        raise last_error

    # -- the one-off recovery levels -------------------------------------------------

    async def _recover(
        self, provider: Provider, request: ModelRequest, error: ProviderError, spent: _Recoveries
    ) -> tuple[ModelRequest, Status] | None:
        """The request to send again at once and the status that says why, or None when no
        one-off level applies (retries with backoff and fallback take over)."""
        if error.status in (429, 402, 403):
            rotated = await self._rotate_key(provider, error, spent)
            if rotated is not None:
                return request, rotated
        if error.output_cap is not None and not spent.output_capped:
            spent.output_capped = True
            if error.context_limit is not None:
                self._learn_context_limit(provider, error)
            return replace(request, max_output_tokens=error.output_cap), Status(
                kind="lowering_output",
                message=(
                    f"{_label(provider)}: only {error.output_cap:,} output tokens are available; "
                    "asking again with that limit"
                ),
                detail={"max_output_tokens": error.output_cap, "error": str(error)},
            )
        if error.invalid_signature and not spent.reasoning_stripped:
            stripped = strip_replayed_reasoning(request.messages)
            if stripped is not None:
                spent.reasoning_stripped = True
                return replace(request, messages=stripped), Status(
                    kind="stripping_reasoning",
                    message=(f"{_label(provider)} rejected the replayed reasoning; asking again without it"),
                    detail={"error": str(error)},
                )
        return None

    async def _rotate_key(
        self, provider: Provider, error: ProviderError, spent: _Recoveries
    ) -> Status | None:
        """The pool's next key, when this call has not tried every key yet. The status names
        key indexes (1-based), never keys."""
        pool = getattr(provider, "api_keys", None) or []
        rotate = getattr(provider, "rotate_key", None)
        tried = spent.rotations.get(self.index, 1)
        if rotate is None or tried >= len(pool):
            return None
        failed = getattr(provider, "key_index", 0)
        new = await rotate()
        if new is None:
            return None
        spent.rotations[self.index] = tried + 1
        logger.info(
            "%s: key #%d refused (HTTP %s); trying key #%d",
            _label(provider),
            failed + 1,
            error.status,
            new + 1,
        )
        return Status(
            kind="rotating_key",
            message=(
                f"{_label(provider)}: key #{failed + 1} of {len(pool)} was refused (HTTP {error.status}); "
                f"trying key #{new + 1}"
            ),
            detail={"failed_key": failed + 1, "next_key": new + 1, "keys": len(pool), "status": error.status},
        )

    def _learn_context_limit(self, provider: Provider, error: ProviderError) -> Status | None:
        """Remember the window an overflow revealed (stored when stated, a tier down when not)."""
        limits = getattr(provider, "context_limits", None)
        if limits is None:
            return None
        stated = error.context_limit
        if stated is None and error.kind is not ErrorKind.CONTEXT_OVERFLOW:
            return None
        window = limits.learn(provider.model, stated=stated)
        if window is None:
            return None
        how = "stated by the endpoint" if stated is not None else "assumed after an overflow"
        return Status(
            kind="context_limit",
            message=f"{_label(provider)}: context window {window:,} tokens ({how})",
            detail={"model": provider.model, "context_window": window, "confirmed": stated is not None},
        )

    async def list_models(self) -> list[str]:
        return await self.current.list_models()

    async def aclose(self) -> None:
        for provider in self.chain:
            try:
                await provider.aclose()
            except Exception:  # closing is best effort; one broken client must not keep others open
                logger.debug("closing %s failed", _label(provider), exc_info=True)


def strip_replayed_reasoning(messages: list[Message]) -> list[Message] | None:
    """The history without what providers replay verbatim (thinking signatures, encrypted
    reasoning items, thought signatures), or None when there was none."""
    if not any(m.provider_data for m in messages if m.role == "assistant"):
        return None
    return [
        replace(m, provider_data=None) if m.role == "assistant" and m.provider_data else m for m in messages
    ]


def _label(provider: Provider) -> str:
    return f"{provider.name}/{provider.model}"


def _describe(error: ProviderError | None) -> str:
    if error is None:
        return "unknown error"
    return f"{error.kind}: {error}"
