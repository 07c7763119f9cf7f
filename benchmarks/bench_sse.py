"""Our SSE reader (core/providers/sse_decoder.py) against the SDK's own stream, on the same bytes.

The README gives a reason for reading the providers' event streams ourselves: the SDKs'
stream classes build a pydantic model per event. This measures it, in one process, on
one body of 10,000 chat-completion chunks (and 10,000 Anthropic deltas), delivered in
reads of one event each (a model streaming slowly) and of 16 KiB (a burst):

- ours: `SSEDecoder.feed` + `json.loads` per event, as `json_batches` does;
- the SDK's decoder alone: its `SSEDecoder.aiter_bytes` + `json.loads` (no models);
- the SDK's stream: `AsyncStream` with the API's chunk model, as `create(stream=True)`.

Each figure is the median of several runs, and the SDK's are given as ratios to ours
(a ratio above 1: ours is faster). The exit code is 1 when ours is slower than the SDK's
stream, the path it replaces.

    python -m benchmarks.bench_sse [--events N] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_core.providers.sse_decoder import SSEDecoder  # noqa: E402

BURST = 16 * 1024


def chat_body(count: int) -> list[bytes]:
    events = []
    for i in range(count):
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": {"content": f"w{i % 10} "}, "finish_reason": None}],
        }
        events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def anthropic_body(count: int) -> list[bytes]:
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    events = [b"event: content_block_start\ndata: " + json.dumps(start).encode() + b"\n\n"]
    for i in range(count):
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": f"w{i % 10} "},
        }
        events.append(b"event: content_block_delta\ndata: " + json.dumps(delta).encode() + b"\n\n")
    events.append(b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n')
    return events


def reads(events: list[bytes], burst: bool) -> list[bytes]:
    if not burst:
        return events
    body = b"".join(events)
    return [body[i : i + BURST] for i in range(0, len(body), BURST)]


async def _aiter(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def ours(pieces: list[bytes], text: Callable[[Any], str | None]) -> int:
    decoder = SSEDecoder()
    count = 0
    async for piece in _aiter(pieces):
        for event in decoder.feed(piece):
            if event.data.startswith("[DONE]"):
                return count
            if text(json.loads(event.data)) is not None:
                count += 1
    for event in decoder.finish():
        if text(json.loads(event.data)) is not None:
            count += 1
    return count


def chat_text(event: dict[str, Any]) -> str | None:
    return event["choices"][0]["delta"].get("content")


def anthropic_text(event: dict[str, Any]) -> str | None:
    return event["delta"].get("text") if event["type"] == "content_block_delta" else None


def openai_client() -> Any:
    import openai

    return openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")


def anthropic_client() -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9")


def _response(client: Any, pieces: list[bytes]) -> Any:
    import httpx2  # what both SDKs stream with

    http = httpx2
    request = http.Request("POST", "http://127.0.0.1:9/stream")
    return http.Response(
        200, headers={"content-type": "text/event-stream"}, content=_aiter(pieces), request=request
    )


async def sdk_decoder(client: Any, pieces: list[bytes], text: Callable[[Any], str | None]) -> int:
    count = 0
    async for event in client._make_sse_decoder().aiter_bytes(_aiter(pieces)):
        if event.data.startswith("[DONE]"):
            break
        if text(json.loads(event.data)) is not None:
            count += 1
    return count


async def sdk_stream(client: Any, pieces: list[bytes], model: type, anthropic: bool) -> int:
    module = sys.modules[type(client).__module__.split(".")[0] + "._streaming"]
    stream = module.AsyncStream(cast_to=model, response=_response(client, pieces), client=client)
    count = 0
    async for item in stream:
        if anthropic:
            if item.type == "content_block_delta" and item.delta.text is not None:
                count += 1
        elif item.choices[0].delta.content is not None:
            count += 1
    return count


async def median_seconds(run: Callable[[], Awaitable[int]], expected: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        count = await run()
        samples.append(time.perf_counter() - started)
        assert count == expected, f"{count} deltas read, not {expected}"
    return statistics.median(samples)


async def main(count: int, runs: int) -> int:
    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk

    openai_sdk, anthropic_sdk = openai_client(), anthropic_client()
    cases: list[tuple[str, list[bytes], Callable[[Any], str | None], Any, Any, bool]] = []
    for burst in (False, True):
        shape = "16 KiB reads" if burst else "one event per read"
        cases.append(
            (
                f"chat completions, {shape}",
                reads(chat_body(count), burst),
                chat_text,
                openai_sdk,
                ChatCompletionChunk,
                False,
            )
        )
        cases.append(
            (
                f"anthropic, {shape}",
                reads(anthropic_body(count), burst),
                anthropic_text,
                anthropic_sdk,
                RawMessageStreamEvent,
                True,
            )
        )
    print(
        f"load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); {count:,} deltas, median of {runs}"
    )
    print(f"{'body':<36} {'ours':>9} {'SDK decoder':>18} {'SDK stream':>18}")
    wins = True
    for name, pieces, text, client, model, anthropic in cases:
        mine = await median_seconds(functools.partial(ours, pieces, text), count, runs)
        decoder = await median_seconds(functools.partial(sdk_decoder, client, pieces, text), count, runs)
        stream = await median_seconds(
            functools.partial(sdk_stream, client, pieces, model, anthropic), count, runs
        )
        wins = wins and mine < stream
        print(
            f"{name:<36} {mine * 1e3:>6.1f} ms {decoder * 1e3:>7.1f} ms ({decoder / mine:>4.1f}x) "
            f"{stream * 1e3:>7.1f} ms ({stream / mine:>4.1f}x)"
        )
    await openai_sdk.close()
    await anthropic_sdk.close()
    return 0 if wins else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.events, arguments.runs)))
