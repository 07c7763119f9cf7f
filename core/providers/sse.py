"""A model's stream: Server-Sent Events read straight off a streaming HTTP response,
as plain dicts (the wire format: core/providers/sse_decoder.py), under a watch that ends a
stream gone stale (core/providers/stale_watch.py).

The request and its status errors are core/providers/http.py's (`SdkProvider.open_stream`).
Only the response body is read here: the SDKs' stream classes built a pydantic model per
event, which cost more than everything else on the path of a long answer; here each event
is one `json.loads`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable
from contextlib import suppress
from typing import Any, cast

from hermes_core.providers.base import ErrorKind, ProviderError
from hermes_core.providers.errors import classify
from hermes_core.providers.sse_decoder import ServerSentEvent, SSEDecoder
from hermes_core.providers.stale_watch import END, StaleWatch

logger = logging.getLogger(__name__)
DONE = "[DONE]"  # OpenAI-style streams end with this data line
DRAIN_SECONDS = 0.1  # how long reading the rest of a finished body may take


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
    """Await an SDK's streaming call (it returns once headers arrived), translating
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


async def json_batches(
    response: Any, *, stale_seconds: float, provider: str
) -> AsyncIterator[list[tuple[str, Any]]]:
    """The (event name, parsed data) of the events each network read completed, together,
    until the body ends or a `[DONE]` data line (the rest of the body is then read and
    dropped, so the connection can serve the next request). A provider merges the deltas
    of one read into one: a fast stream costs a message per read, not per token.

    No event for `stale_seconds` -> ProviderError(STALE); keep-alive comments do not
    count, they show a live connection, not a live model. A broken connection, or data
    that is not JSON -> ProviderError(TRANSIENT). Events without data are skipped.
    """
    watch = StaleWatch(stale_seconds=stale_seconds, provider=provider)
    decoder = SSEDecoder()
    chunks = ReadAhead(_body(response))
    try:
        while True:
            arrived = await watch.read(chunks)
            ended = arrived is END
            events = decoder.finish() if ended else decoder.feed(b"".join(cast(list[bytes], arrived)))
            batch: list[tuple[str, Any]] = []
            for event in events:
                if not event.data:
                    continue
                if event.data.startswith(DONE):
                    if batch:
                        yield batch
                    await _drain(chunks)
                    return
                batch.append((event.event, _parse(event, provider)))
            if batch:
                yield batch
            if ended:
                return
            if events:
                watch.restart()
    finally:
        watch.close()
        await close_quietly(chunks)


class ReadAhead:
    """A body's chunks, handed over as lists: every chunk that arrived since the last
    `anext`, together.

    Why: the HTTP layer hands a response's chunks over one by one, also those of a single
    network read: a provider that sends each delta in an HTTP chunk of its own (they all
    do) gave one batch, and so one editor message, per delta however fast they came. A
    task reads the body as it arrives; a reader gets all of it that is there at once (a
    lone chunk as soon as it is there: nothing waits for more). The reader's own waits
    are what the stale watch times, as before.
    """

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks
        self._arrived: list[bytes] = []
        self._ended = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            async for chunk in self._chunks:
                self._arrived.append(chunk)
                self._wake()
        except Exception as exc:  # raised to the reader, after what came before it
            self._error = exc
        finally:
            self._ended = True
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> ReadAhead:
        return self

    async def __anext__(self) -> list[bytes]:
        while not self._arrived:
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        arrived, self._arrived = self._arrived, []
        return arrived

    async def aclose(self) -> None:
        if not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task})  # a cancel of the caller is not swallowed here
        await close_quietly(self._chunks)


EventHandler = Callable[[str, Any, list[Any]], bool]


async def deltas_by_read(
    batches: AsyncIterator[list[tuple[str, Any]]], handle: EventHandler, *, provider: str
) -> AsyncIterator[Any]:
    """The deltas of a stream, those of one network read merged (`merged`): a fast stream
    costs the editor a message per read, not per token.

    `handle(name, data, read)` takes each event in order, appends the deltas it finds to
    `read` and answers True once the stream is complete, which ends the reading. An event
    that raises (a stream error, a malformed event) still lets the deltas before it in the
    same read out first, then its error goes up.
    """
    async for batch in batches:
        read: list[Any] = []
        failure: Exception | None = None
        complete = False
        try:
            for name, data in batch:
                try:
                    complete = handle(name, data, read)
                except MALFORMED as exc:
                    raise malformed(exc, data, provider=provider) from exc
                if complete:
                    break
        except Exception as exc:
            failure = exc
        for item in merged(read):
            yield item
        if failure is not None:
            raise failure
        if complete:
            return


def merged(deltas: list[Any]) -> list[Any]:
    """Runs of deltas of one kind (TextDelta, ThoughtDelta) joined into one delta each."""
    if len(deltas) < 2:
        return deltas
    out: list[Any] = []
    run: list[str] = []
    for delta in deltas:
        if out and type(out[-1]) is type(delta):
            run.append(delta.text)
            continue
        if len(run) > 1:
            out[-1] = type(out[-1])("".join(run))
        out.append(delta)
        run = [delta.text]
    if len(run) > 1:
        out[-1] = type(out[-1])("".join(run))
    return out


def _body(response: Any) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive (core/providers/http.py `Response.chunks`)."""
    chunks: AsyncIterator[bytes] = response.chunks()
    return chunks


async def drain(events: AsyncIterator[Any]) -> None:
    """Read what is left of a stream whose API terminator arrived, briefly, so its
    connection goes back to the pool instead of being torn down."""
    with suppress(ProviderError, TimeoutError):
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in events:
                pass


async def _drain(chunks: AsyncIterable[object]) -> None:
    with suppress(Exception):  # the answer is complete; a failing tail changes nothing
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in chunks:
                pass


# What reading a JSON event of the wrong shape raises (a list where an object belongs, ...).
MALFORMED = (AttributeError, TypeError, KeyError, IndexError)


def malformed(exc: BaseException, data: Any, *, provider: str) -> ProviderError:
    """The error for an event that parsed as JSON but not in the API's shape: a garbled or
    foreign stream, worth a retry and then another endpoint, like data that is not JSON."""
    excerpt = repr(data)
    excerpt = excerpt if len(excerpt) <= 200 else excerpt[:200] + "..."
    return ProviderError(
        ErrorKind.TRANSIENT,
        f"the stream sent an event of an unexpected shape ({type(exc).__name__}: {exc}): {excerpt}",
        provider=provider,
    )


def _parse(event: ServerSentEvent, provider: str) -> Any:
    try:
        return json.loads(event.data)
    except ValueError as exc:
        excerpt = event.data if len(event.data) <= 200 else event.data[:200] + "..."
        raise ProviderError(
            ErrorKind.TRANSIENT,
            f"the stream sent a {event.event!r} event whose data is not JSON: {excerpt!r}",
            provider=provider,
        ) from exc
