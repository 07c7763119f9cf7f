"""The SSE parser the providers read their streams with, and the stale watch on its reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hermes_core.providers.base import ErrorKind, ProviderError
from hermes_core.providers.errors import classify_stream_error
from hermes_core.providers.sse_decoder import ServerSentEvent, SSEDecoder
from hermes_core.providers.stale_watch import END, StaleWatch


def parse(*pieces: bytes, finish: bool = True) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for piece in pieces for event in decoder.feed(piece)]
    return events + (decoder.finish() if finish else [])


def data(events: list[ServerSentEvent]) -> list[str]:
    return [event.data for event in events]


STREAM = (
    b": welcome\n"
    b"event: message_start\n"
    b'data: {"type": "message_start", "text": "h\xc3\xa9llo \xe2\x9c\x93"}\n'
    b"\n"
    b"data: first line\n"
    b"data: second line\n"
    b"id: 7\n"
    b"\n"
    b": keep-alive\n"
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)
EXPECTED = [
    ServerSentEvent("message_start", '{"type": "message_start", "text": "héllo ✓"}', ""),
    ServerSentEvent("message", "first line\nsecond line", "7"),
    ServerSentEvent("message", "[DONE]", "7"),
]


def test_a_whole_stream_parses_into_its_events():
    assert parse(STREAM) == EXPECTED


def test_events_split_across_network_reads_anywhere_parse_the_same():
    # Every cut point, including inside the multi-byte characters and between "\r\n".
    crlf = STREAM.replace(b"\n", b"\r\n")
    for stream in (STREAM, crlf):
        for cut in range(1, len(stream)):
            assert parse(stream[:cut], stream[cut:]) == EXPECTED, (stream, cut)
    assert parse(*(crlf[i : i + 1] for i in range(len(crlf)))) == EXPECTED  # byte by byte


def test_crlf_and_lone_cr_end_lines_too():
    assert data(parse(b"data: a\r\ndata: b\r\n\r\n")) == ["a\nb"]
    assert data(parse(b"data: a\rdata: b\r\r")) == ["a\nb"]
    # A CR ending one read and the LF opening the next are one line end, not a blank line.
    assert data(parse(b"data: a\r", b"\ndata: b\r\n\r\n")) == ["a\nb"]


def test_multi_line_data_keeps_its_lines_and_empty_ones():
    assert data(parse(b'data: {\ndata:\ndata:   "x": 1}\n\n')) == ['{\n\n  "x": 1}']


def test_comments_and_blocks_without_data_dispatch_nothing():
    assert parse(b": ping\n\n:\n\nevent: ping\n\nid: 3\n\n") == []
    # The event name of a data-less block does not leak into the next event.
    assert parse(b"event: ping\n\ndata: x\n\n") == [ServerSentEvent("message", "x", "")]


def test_field_syntax_follows_the_spec():
    events = parse(
        b"data:no space\n\n"  # the space after the colon is optional
        b"data:  two spaces\n\n"  # only one is removed
        b"data: a: b\n\n"  # later colons belong to the value
        b"data\n\n"  # a field without a colon has an empty value
        b"retry: 10\nfoo: bar\ndata: x\n\n"  # unknown fields and retry are ignored
    )
    assert data(events) == ["no space", " two spaces", "a: b", "", "x"]


def test_a_leading_byte_order_mark_is_dropped():
    assert data(parse(b"\xef\xbb", b"\xbfdata: x\n\n")) == ["x"]


def test_a_final_event_without_its_blank_line_is_still_dispatched():
    assert data(parse(b'data: {"a": 1}\n\ndata: {"b": 2}\n')) == ['{"a": 1}', '{"b": 2}']
    assert data(parse(b"data: [DONE]")) == ["[DONE]"]  # nor even a line end
    assert data(parse(b'data: {"b": 2}\n', finish=False)) == []  # not before the body ended


def test_invalid_utf8_is_replaced_not_fatal():
    assert data(parse(b"data: \xff\xfe ok\n\n")) == ["\ufffd\ufffd ok"]


def test_a_long_line_in_many_small_reads():
    payload = b"x" * 200_000
    pieces = [b"data: "] + [payload[i : i + 1000] for i in range(0, len(payload), 1000)] + [b"\n\n"]
    assert data(parse(*pieces)) == [payload.decode()]


# -- in-stream error objects -----------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, ErrorKind.RATE_LIMIT),
        ({"code": "rate_limit_exceeded", "message": "slow down"}, ErrorKind.RATE_LIMIT),
        ({"code": "context_length_exceeded", "message": "too long"}, ErrorKind.CONTEXT_OVERFLOW),
        ({"type": "authentication_error", "message": "bad key"}, ErrorKind.AUTH),
        ({"code": 502, "message": "Upstream error"}, ErrorKind.TRANSIENT),  # OpenRouter: numbers
        ({"type": "api_error", "message": "Internal server error"}, ErrorKind.TRANSIENT),
        ("something broke", ErrorKind.TRANSIENT),
    ],
)
def test_in_stream_error_objects_are_classified(error, kind):
    failure = classify_stream_error(error, provider="p")
    assert (failure.kind, failure.provider, failure.status) == (kind, "p", None)
    assert str(failure)


def test_an_in_stream_error_without_a_message_still_says_what_it_was():
    assert "overloaded_error" in str(classify_stream_error({"type": "overloaded_error"}, provider="p"))


# -- the stale watch -------------------------------------------------------------------


async def trickle(delays: list[float]) -> AsyncIterator[int]:
    for n, delay in enumerate(delays):
        await asyncio.sleep(delay)
        yield n


async def test_the_watch_reads_until_the_end():
    watch = StaleWatch(stale_seconds=30, provider="p")  # not what is tested: no load outlasts it
    items = []
    iterator = trickle([0, 0.01, 0])
    while (item := await watch.read(iterator)) is not END:
        items.append(item)
        watch.restart()
    watch.close()
    assert items == [0, 1, 2]


async def test_a_silent_stream_is_stale():
    watch = StaleWatch(stale_seconds=0.1, provider="p")
    iterator = trickle([0, 60])  # silent far longer than the window, whatever the load
    assert await watch.read(iterator) == 0
    watch.restart()
    with pytest.raises(ProviderError) as caught:
        await watch.read(iterator)
    watch.close()
    assert (caught.value.kind, caught.value.provider) == (ErrorKind.STALE, "p")
    assert asyncio.current_task().cancelling() == 0  # its own cancel was taken back


async def test_time_the_consumer_spends_between_reads_does_not_count():
    watch = StaleWatch(stale_seconds=0.1, provider="p")
    iterator = trickle([0, 0, 0])
    items = []
    while (item := await watch.read(iterator)) is not END:
        items.append(item)
        await asyncio.sleep(0.25)  # a slow consumer, well past the stale window
        watch.restart()
    watch.close()
    assert items == [0, 1, 2]


async def test_without_restart_the_window_spans_reads():
    # Reads that bring no complete event (a keep-alive comment) do not restart the window.
    watch = StaleWatch(stale_seconds=0.15, provider="p")
    iterator = trickle([0.06] * 10)
    with pytest.raises(ProviderError) as caught:
        while await watch.read(iterator) is not END:
            pass
    watch.close()
    assert caught.value.kind is ErrorKind.STALE


async def test_cancelling_a_reader_is_a_cancel_not_a_stale_stream():
    watch = StaleWatch(stale_seconds=5, provider="p")
    reading = asyncio.create_task(watch.read(trickle([10])))
    await asyncio.sleep(0.05)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    watch.close()


async def test_a_failing_stream_becomes_a_provider_error():
    async def broken() -> AsyncIterator[bytes]:
        yield b"data: x\n"
        raise ConnectionResetError("peer reset")

    watch = StaleWatch(stale_seconds=5, provider="p")
    iterator = broken()
    assert await watch.read(iterator) == b"data: x\n"
    with pytest.raises(ProviderError) as caught:
        await watch.read(iterator)
    watch.close()
    assert caught.value.kind is ErrorKind.TRANSIENT


# -- deltas of one network read ---------------------------------------------------------------


def test_runs_of_one_kind_merge_and_the_order_of_kinds_stays() -> None:
    from hermes_core.events import TextDelta, ThoughtDelta
    from hermes_core.providers.sse import merged

    deltas = [
        ThoughtDelta("a"),
        ThoughtDelta("b"),
        TextDelta("c"),
        TextDelta("d"),
        TextDelta("e"),
        ThoughtDelta("f"),
    ]
    assert merged(deltas) == [ThoughtDelta("ab"), TextDelta("cde"), ThoughtDelta("f")]
    assert merged([TextDelta("x")]) == [TextDelta("x")]


class _Reads:
    """A raw SDK response whose body arrives in the given network reads: the HTTP layer
    hands each read's HTTP chunks over one by one; a read after the first comes once the
    test lets it (`next_read`), as a later read off the network would."""

    def __init__(self, *reads: list[bytes]) -> None:
        self._reads = reads
        self._next = asyncio.Semaphore(0)

    def next_read(self) -> None:
        self._next.release()

    async def chunks(self):  # type: ignore[no-untyped-def]
        for index, read in enumerate(self._reads):
            if index:
                await self._next.acquire()
            for http_chunk in read:
                yield http_chunk


def _chunk(text: str) -> bytes:
    return b'data: {"choices": [{"delta": {"content": "%s"}}]}\n\n' % text.encode()


@pytest.mark.asyncio
async def test_the_events_of_one_read_come_together_and_of_the_next_read_apart() -> None:
    from hermes_core.providers.sse import json_batches

    # each event in an HTTP chunk of its own, as providers send them
    body = _Reads([_chunk(c) for c in "abc"], [_chunk("d"), b"data: [DONE]\n\n"])
    batches = json_batches(body, stale_seconds=5, provider="p")

    def texts(batch: list[tuple[str, Any]]) -> list[str]:
        return [data["choices"][0]["delta"]["content"] for _, data in batch]

    assert texts(await anext(batches)) == ["a", "b", "c"]
    body.next_read()
    assert texts(await anext(batches)) == ["d"]
    assert [batch async for batch in batches] == []
