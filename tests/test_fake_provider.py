"""The scripted provider server itself, through raw HTTP: framing, failures, recording."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx2 as httpx
import pytest

from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def sse_events(raw: str) -> list[tuple[str | None, str]]:
    """(event name, data) per SSE event of a body."""
    events = []
    for block in raw.split("\n\n"):
        if not block.strip():
            continue
        name = None
        data = []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
        events.append((name, "\n".join(data)))
    return events


def post(fake: FakeProvider, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{fake.port}{path}", json=body, headers=headers, timeout=5)


def test_chat_completions_stream_is_chunked_sse_ending_in_done(fake):
    fake.script([Reply(text="Hello there, friend.", chunk_size=4, usage=(12, 3, 2))])
    response = post(
        fake,
        "/v1/chat/completions",
        {"model": "m1", "stream": True, "stream_options": {"include_usage": True}},
    )
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["transfer-encoding"] == "chunked"
    events = sse_events(response.text)
    assert events[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in events[:-1]]
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    pieces = [p for p in pieces if p]
    assert "".join(pieces) == "Hello there, friend."
    assert max(len(p) for p in pieces) == 4
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["prompt_tokens"] == 12
    assert chunks[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 2
    assert all(c["model"] == "m1" for c in chunks)


def test_chat_completions_without_stream_is_plain_json(fake):
    fake.script([Reply(text="plain", tool_calls=[ToolCallSpec("read", {"path": "a"}, id="c1")])])
    body = post(fake, "/v1/chat/completions", {"model": "m"}).json()
    choice = body["choices"][0]
    assert choice["message"]["content"] == "plain"
    assert choice["message"]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path": "a"}'}
    assert choice["finish_reason"] == "tool_calls"


def test_tool_arguments_arrive_in_at_least_two_pieces(fake):
    fake.script([Reply(tool_calls=[ToolCallSpec("f", {"x": 1}), ToolCallSpec("g", "{oops")])])
    events = sse_events(post(fake, "/chat/completions", {"stream": True}).text)
    deltas = [json.loads(d)["choices"][0]["delta"] for _, d in events[:-1]]
    arguments: dict[int, list[str]] = {}
    for delta in deltas:
        for call in delta.get("tool_calls", []):
            piece = call["function"].get("arguments")
            if piece:
                arguments.setdefault(call["index"], []).append(piece)
    assert len(arguments[0]) >= 2 and "".join(arguments[0]) == '{"x": 1}'
    assert len(arguments[1]) >= 2 and "".join(arguments[1]) == "{oops"


def test_think_tags_are_split_across_chunks(fake):
    fake.script([Reply(text="answer", reasoning="pondering", reasoning_field="think_tags")])
    events = sse_events(post(fake, "/chat/completions", {"stream": True}).text)
    pieces = [json.loads(d)["choices"][0]["delta"].get("content") for _, d in events[:-1]]
    pieces = [p for p in pieces if p]
    assert "".join(pieces) == "<think>pondering</think>answer"
    assert "<think>" not in pieces and not any("<think>" in p for p in pieces)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_uses_the_requested_delta_field(fake, field):
    fake.script([Reply(text="a", reasoning="deep thought", reasoning_field=field)])
    events = sse_events(post(fake, "/chat/completions", {"stream": True}).text)
    deltas = [json.loads(d)["choices"][0]["delta"] for _, d in events[:-1]]
    assert "".join(d.get(field, "") for d in deltas) == "deep thought"


def test_anthropic_stream_names_each_event_and_ends_with_message_stop(fake):
    fake.script([Reply(text="hi there", reasoning="hmm", usage=(100, 7, 40))])
    response = post(fake, "/v1/messages", {"model": "claude", "stream": True})
    events = sse_events(response.text)
    for name, data in events:
        assert json.loads(data)["type"] == name
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    start = json.loads(events[0][1])["message"]
    assert start["usage"]["input_tokens"] == 60 and start["usage"]["cache_read_input_tokens"] == 40
    deltas = [json.loads(d)["delta"] for n, d in events if n == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "hmm"
    assert any(d["type"] == "signature_delta" for d in deltas)
    assert "".join(d.get("text", "") for d in deltas) == "hi there"
    assert json.loads(events[-2][1])["delta"]["stop_reason"] == "end_turn"


def test_responses_stream_ends_with_completed_or_incomplete(fake):
    fake.script([Reply(text="one two"), Reply(text="cut", finish_reason="length")])
    done = sse_events(post(fake, "/v1/responses", {"model": "m", "stream": True}).text)
    assert done[0][0] == "response.created" and done[-1][0] == "response.completed"
    text = "".join(json.loads(d)["delta"] for n, d in done if n == "response.output_text.delta")
    assert text == "one two"
    cut = sse_events(post(fake, "/v1/responses", {"model": "m", "stream": True}).text)
    assert cut[-1][0] == "response.incomplete"
    details = json.loads(cut[-1][1])["response"]["incomplete_details"]
    assert details == {"reason": "max_output_tokens"}


def test_paths_with_and_without_v1_reach_the_same_endpoint(fake):
    fake.script([Reply(text="a"), Reply(text="b"), Reply(text="c")])
    first = post(fake, "/chat/completions", {}).json()
    second = post(fake, "/v1/chat/completions", {}).json()
    third = post(fake, "/v1/v1/messages", {}).json()
    assert first["choices"][0]["message"]["content"] == "a"
    assert second["choices"][0]["message"]["content"] == "b"
    assert third["content"][0]["text"] == "c"
    assert [r.path for r in fake.requests] == ["/chat/completions", "/v1/chat/completions", "/v1/v1/messages"]


def test_models_are_listed_in_each_apis_shape(fake):
    fake.models = ["m1", "m2"]
    openai_shape = httpx.get(fake.url + "/models").json()
    assert openai_shape["object"] == "list"
    assert [m["id"] for m in openai_shape["data"]] == ["m1", "m2"]
    anthropic_shape = httpx.get(
        fake.anthropic_base_url + "/v1/models", headers={"anthropic-version": "2023-06-01"}
    ).json()
    assert [m["id"] for m in anthropic_shape["data"]] == ["m1", "m2"]
    assert anthropic_shape["has_more"] is False
    assert fake.requests == []  # listing models is not a model request


def test_error_replies_use_each_apis_error_shape_and_headers(fake):
    fake.script([Reply.rate_limited(0.25), Reply.rate_limited(0.25), Reply.context_overflow()])
    openai_error = post(fake, "/v1/chat/completions", {"stream": True})
    assert openai_error.status_code == 429
    assert openai_error.headers["retry-after"] == "0.25"
    assert openai_error.json()["error"]["code"] == "rate_limit_exceeded"
    anthropic_error = post(fake, "/v1/messages", {"stream": True})
    assert anthropic_error.json() == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": anthropic_error.json()["error"]["message"]},
    }
    overflow = post(fake, "/v1/responses", {"stream": True})
    assert overflow.status_code == 400
    assert overflow.json()["error"]["code"] == "context_length_exceeded"
    assert "maximum context length" in overflow.json()["error"]["message"]


def test_overloaded_is_529_for_anthropic_and_503_elsewhere(fake):
    fake.script([Reply.overloaded(), Reply.overloaded()])
    assert post(fake, "/v1/messages", {}).status_code == 529
    assert post(fake, "/v1/chat/completions", {}).status_code == 503


def test_other_helpers_and_a_verbatim_error_body(fake):
    fake.script([Reply.server_error(), Reply.unauthorized(), Reply(status=418, error_body={"odd": True})])
    assert post(fake, "/v1/chat/completions", {}).status_code == 500
    assert post(fake, "/v1/chat/completions", {}).status_code == 401
    teapot = post(fake, "/v1/chat/completions", {})
    assert (teapot.status_code, teapot.json()) == (418, {"odd": True})


def test_an_exhausted_script_fails_loudly(fake):
    response = post(fake, "/v1/chat/completions", {"stream": True})
    assert response.status_code == 500
    assert response.json() == {"error": {"message": "fake provider: script exhausted"}}


def test_drop_after_breaks_the_http_body(fake):
    fake.script([Reply(text="a b c d e f", chunk_size=1, drop_after=3)])
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", fake.url + "/chat/completions", json={"stream": True}) as response,
    ):
        response.read()


def test_drop_cleanly_ends_the_body_without_the_api_terminator(fake):
    fake.script([Reply(text="a b c d e f", chunk_size=1, drop_after=3, drop_cleanly=True)])
    events = sse_events(post(fake, "/v1/chat/completions", {"stream": True}).text)
    assert len(events) == 3
    assert (None, "[DONE]") not in events


def test_stall_sends_the_first_event_then_goes_quiet(fake):
    fake.script([Reply(text="one two", stall=0.3)])
    arrivals = []
    with httpx.stream("POST", fake.url + "/chat/completions", json={"stream": True}) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append(time.monotonic())
    assert arrivals[1] - arrivals[0] >= 0.25


def test_delay_holds_back_the_headers(fake):
    fake.script([Reply(text="late", delay=0.3)])
    sent = time.monotonic()
    with httpx.stream("POST", fake.url + "/chat/completions", json={"stream": True}):
        assert time.monotonic() - sent >= 0.25


def test_custom_headers_are_sent(fake):
    fake.script([Reply(text="x", headers={"x-request-id": "req-7"})])
    assert post(fake, "/v1/chat/completions", {"stream": True}).headers["x-request-id"] == "req-7"


def test_requests_are_recorded_in_order_and_waitable(fake):
    fake.script([Reply(text="a")])
    fake.add(Reply(text="b"))
    threading.Thread(
        target=lambda: [post(fake, "/v1/responses", {"n": i}, **{"X-Trace": "t"}) for i in range(2)]
    ).start()
    recorded = fake.wait_for_requests(2, timeout=5)
    assert [r.body for r in recorded] == [{"n": 0}, {"n": 1}]
    assert recorded[0].headers["x-trace"] == "t"
    assert recorded[0].time <= recorded[1].time
    with pytest.raises(TimeoutError):
        fake.wait_for_requests(3, timeout=0.05)


def test_script_replaces_the_queue(fake):
    fake.script([Reply(text="old"), Reply(text="older")])
    fake.script([Reply(text="new")])
    assert post(fake, "/chat/completions", {}).json()["choices"][0]["message"]["content"] == "new"
    assert post(fake, "/chat/completions", {}).status_code == 500


def test_close_does_not_wait_for_a_stalled_stream():
    fake = FakeProvider()
    fake.script([Reply(text="never finished", stall=60)])
    outcome: list[str] = []

    def read() -> None:
        try:
            with httpx.stream("POST", fake.url + "/chat/completions", json={"stream": True}) as response:
                response.read()
            outcome.append("ended")
        except httpx.HTTPError as exc:
            outcome.append(type(exc).__name__)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    fake.wait_for_requests(1)
    fake.close()
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert outcome  # the client saw the stream end (cut short), not a hang
    assert not any(t.name == "fake-provider" and t.is_alive() for t in threading.enumerate())
