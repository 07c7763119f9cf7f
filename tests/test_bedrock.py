"""Bedrock Converse through the real boto3/botocore, against the scripted server speaking
ConverseStream's event stream framing (tests/support/fake_bedrock.py)."""

from __future__ import annotations

import asyncio
import base64
import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from hermes_core.config import Settings
from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall, user
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError, ToolSpec
from hermes_core.providers.bedrock import BedrockConverseProvider
from hermes_core.providers.resolve import build_chain, has_credentials
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
READ_FILE = ToolSpec(
    "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
)
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n fake png bytes").decode()


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials, and nothing else from this machine's AWS setup (no IMDS)."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def bedrock(fake: FakeProvider, *, stale: float = 5.0, **options: Any) -> BedrockConverseProvider:
    return BedrockConverseProvider(
        MODEL,
        base_url=f"http://127.0.0.1:{fake.port}",
        name="bedrock",
        timeout=10,
        stale_seconds=stale,
        **options,
    )


def request(*messages: Message, **options: Any) -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=list(messages) or [user("hi")], **options)


async def run(provider: BedrockConverseProvider, req: ModelRequest | None = None) -> list[Any]:
    try:
        async with aclosing(provider.stream(req or request())) as items:
            return [item async for item in items]
    finally:
        await provider.aclose()


async def failure(provider: BedrockConverseProvider, req: ModelRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await run(provider, req)
    return caught.value


async def test_text_streams_then_one_response_with_usage(fake):
    fake.script([Reply(text="The quick brown fox", chunk_size=4, usage=(120, 9, 100))])
    items = await run(bedrock(fake))
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["The ", "quic", "k br", "own ", "fox"]
    response = items[-1]
    assert isinstance(response, ModelResponse) and sum(isinstance(i, ModelResponse) for i in items) == 1
    assert (response.text, response.finish_reason) == ("The quick brown fox", "stop")
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cached_tokens) == (
        120,
        9,
        100,
    )
    sent = fake.requests[0]
    assert sent.path == "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    assert "/us-east-1/bedrock/aws4_request" in sent.headers["authorization"]  # signed, region from env
    assert sent.body["system"] == [{"text": "You are terse."}]
    assert sent.body["inferenceConfig"] == {"maxTokens": 64_000}  # the Claude 4 entry, through the id
    assert sent.body["messages"] == [{"role": "user", "content": [{"text": "hi"}]}]


async def test_tool_calls_results_and_images_map_to_converse_blocks(fake):
    call = ToolCallSpec("read_file", {"path": "notes.txt"}, id="tooluse_a")
    fake.script([Reply(text="Looking.", tool_calls=[call], chunk_size=3), Reply(text="Done.")])
    first = (await run(bedrock(fake), request(user("read it"), tools=[READ_FILE])))[-1]
    assert first.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("tooluse_a", "read_file", {"path": "notes.txt"})
    ]
    assert fake.requests[0].body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"] == {
        "json": READ_FILE.parameters
    }
    history = [
        user([TextPart("what is in this picture?"), ImagePart("image/png", PIXEL)]),
        Message(role="assistant", content=first.text, tool_calls=first.tool_calls),
        Message(
            role="tool", content="no such file", tool_call_id="tooluse_a", name="read_file", is_error=True
        ),
    ]
    await run(bedrock(fake), request(*history, tools=[READ_FILE]))
    sent = fake.requests[1].body["messages"]
    assert sent[0]["content"][1] == {"image": {"format": "png", "source": {"bytes": PIXEL}}}
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "tooluse_a", "name": "read_file", "input": {"path": "notes.txt"}}},
        ],
    }
    assert sent[2] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse_a",
                    "content": [{"text": "no such file"}],
                    "status": "error",
                }
            }
        ],
    }


async def test_reasoning_streams_as_thoughts_and_is_replayed_with_its_signature(fake):
    fake.script([Reply(text="42", reasoning="Six times seven."), Reply(text="yes")])
    items = await run(bedrock(fake), request(reasoning_effort="low"))
    assert "".join(i.text for i in items if isinstance(i, ThoughtDelta)) == "Six times seven."
    assert fake.requests[0].body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2_048}
    }
    answer = items[-1]
    # stored and loaded as the session store does it
    stored = Message.from_dict(
        json.loads(
            json.dumps(Message("assistant", answer.text, provider_data=answer.provider_data).to_dict())
        )
    )
    await run(bedrock(fake), request(user("hi"), stored, user("sure?")))
    replayed = fake.requests[1].body["messages"][1]["content"][0]
    assert replayed["reasoningContent"]["reasoningText"]["text"] == "Six times seven."
    assert replayed["reasoningContent"]["reasoningText"]["signature"].startswith("sig-")


@pytest.mark.parametrize(
    ("reply", "kind", "status"),
    [
        (Reply.rate_limited(), ErrorKind.RATE_LIMIT, 429),
        (Reply(status=403, error_kind="auth"), ErrorKind.AUTH, 403),
        (Reply(status=400, error_kind="context_overflow"), ErrorKind.CONTEXT_OVERFLOW, 400),
        (Reply.server_error(), ErrorKind.TRANSIENT, 500),
        (Reply(text="partial", stream_error="rate_limit"), ErrorKind.RATE_LIMIT, None),
        (Reply(text="partial", stream_error="server"), ErrorKind.TRANSIENT, None),
    ],
)
async def test_errors_before_and_inside_the_stream_are_classified(fake, reply, kind, status):
    fake.script([reply])
    error = await failure(bedrock(fake))
    assert (error.kind, error.status) == (kind, status)
    assert len(fake.requests) == 1  # botocore does not retry on its own


async def test_a_stalled_stream_is_reported_stale(fake):
    fake.script([Reply(text="one two three", stall=10)])
    error = await failure(bedrock(fake, stale=0.3))
    assert error.kind is ErrorKind.STALE


async def test_closing_the_consumer_closes_the_http_stream(fake):
    fake.script([Reply(text="x" * 400, chunk_size=1, chunk_delay=0.02)])
    provider = bedrock(fake)
    try:
        async with aclosing(provider.stream(request())) as items:
            async for item in items:
                assert isinstance(item, TextDelta)
                break
        await asyncio.to_thread(fake.wait_for_disconnects, 1, 10)
    finally:
        await provider.aclose()


async def test_settings_pick_bedrock_its_region_and_its_model_list(fake, tmp_path):
    fake.models = ["anthropic.claude-sonnet-4-20250514-v1:0", "amazon.nova-pro-v1:0"]
    settings = Settings(
        home=tmp_path,
        provider="bedrock",
        model=MODEL,
        base_url=f"http://127.0.0.1:{fake.port}",
        bedrock_region="eu-west-1",
    )
    assert has_credentials(settings)
    provider = build_chain(settings)[0]
    assert provider.api_mode == "bedrock_converse"
    fake.script([Reply(text="OK")])
    items = await run(provider)
    assert items[-1].text == "OK"
    assert "/eu-west-1/bedrock/aws4_request" in fake.requests[0].headers["authorization"]
    assert await provider.list_models() == fake.models
    await provider.aclose()


def test_message_ids_and_history_survive_a_tool_call_without_arguments():
    from hermes_core.providers.bedrock_messages import to_converse_messages

    history = [
        Message(role="assistant", tool_calls=[ToolCall("t1", "list", "")]),
        Message(role="tool", content="", tool_call_id="t1"),
        Message(role="tool", content="second", tool_call_id="t2"),
    ]
    wire = to_converse_messages(history)
    assert wire[0]["content"] == [{"toolUse": {"toolUseId": "t1", "name": "list", "input": {}}}]
    # both results in one user message; an empty result still says something
    assert [b["toolResult"]["content"] for b in wire[1]["content"]] == [
        [{"text": "(no output)"}],
        [{"text": "second"}],
    ]


async def test_a_tool_result_with_a_lone_surrogate_goes_through(fake):
    fake.script([Reply(text="fine")])
    history = [
        user("read it"),
        Message(role="assistant", tool_calls=[ToolCall("t1", "read_file", '{"path": "x"}')]),
        Message(role="tool", content="bytes \ud800 here", tool_call_id="t1", name="read_file"),
    ]
    items = await run(bedrock(fake), request(*history))
    assert items[-1].text == "fine"
    result = fake.requests[0].body["messages"][2]["content"][0]["toolResult"]
    assert result["content"] == [{"text": "bytes \ufffd here"}]


def bedrock_env(home: Path, fake: Any, region: str) -> dict[str, str]:
    """The server pointed at the fake as Bedrock, with static keys and no instance metadata."""
    from tests.support.acp_harness import server_env

    return server_env(
        home,
        model=MODEL,
        HERMES_ACP_PROVIDER="bedrock",
        HERMES_ACP_BASE_URL=f"http://127.0.0.1:{fake.port}",
        AWS_ACCESS_KEY_ID="x",
        AWS_SECRET_ACCESS_KEY="x",
        AWS_REGION=region,
        AWS_EC2_METADATA_DISABLED="true",
    )


def test_check_reaches_bedrock_lists_its_models_and_gets_an_answer(fake, tmp_path):
    import subprocess
    import sys

    fake.models = ["anthropic.claude-sonnet-4-20250514-v1:0", "amazon.nova-pro-v1:0"]
    fake.script([Reply(text="OK")])
    env = bedrock_env(tmp_path, fake, "us-west-2")
    result = subprocess.run(
        [sys.executable, "-m", "hermes_acp", "--check"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reachable (2 models listed)" in result.stdout  # the inference profile names a listed model
    assert f"{MODEL} answered" in result.stdout
    assert fake.requests[-1].body["inferenceConfig"] == {"maxTokens": 1}


async def test_a_turn_over_acp_runs_a_tool_through_bedrock(fake, tmp_path, project):
    from tests.support.acp_harness import connected

    (project / "notes.txt").write_text("the answer is 42\n")
    call = ToolCallSpec("read_file", {"path": "notes.txt"}, id="tooluse_1")
    fake.script([Reply(tool_calls=[call]), Reply(text="It says 42.")])
    env = bedrock_env(tmp_path, fake, "us-east-1")
    async with connected(env) as (process, client):
        session = (await client.new_session(project))["sessionId"]
        assert await client.prompt(session, "what is in notes.txt?") == {"stopReason": "end_turn"}
        assert client.text(session) == "It says 42."
        process.assert_clean()
    result = fake.requests[1].body["messages"][-1]["content"][0]["toolResult"]
    assert result["toolUseId"] == "tooluse_1" and result["status"] == "success"
    assert "the answer is 42" in json.dumps(result["content"])


def test_building_a_bedrock_provider_leaves_boto3_unloaded(tmp_path):
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from hermes_core.config import Settings\n"
        "from hermes_core.providers.resolve import build_chain\n"
        f"chain = build_chain(Settings(home={str(tmp_path)!r}, provider='bedrock', model={MODEL!r}))\n"
        "print(chain[0].api_mode, sorted(m for m in ('boto3', 'botocore') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == ["bedrock_converse", "[]"]


async def test_a_kept_converse_form_never_outlives_the_message_it_came_from(fake):
    from hermes_core.loop.compression import apply_compression, plan_compression
    from hermes_core.messages import repair_alternation
    from tests.support.sdk_bodies import exchange

    async def sent(provider: BedrockConverseProvider, history: list[Message]) -> bytes:
        fake.script([Reply(text="ok")])
        await run(provider, request(*repair_alternation(history)))
        return fake.requests[-1].raw

    kept = bedrock(fake)  # one provider for the whole session: its messages keep their blocks
    history = [m for n in range(4) for m in exchange(n)]

    async def same_as_fresh() -> bytes:
        body = await sent(kept, history)
        assert body == await sent(bedrock(fake), [Message.from_dict(m.to_dict()) for m in history])
        return body

    await same_as_fresh()
    history += exchange(4)
    assert b"answer 4" in await same_as_fresh()
    history[4].content = "an edited answer"  # a field assigned on a message already sent
    body = await same_as_fresh()
    assert b"an edited answer" in body and b"answer 0" not in body
    plan = plan_compression(history, keep_first=2, keep_last=4)
    assert plan is not None
    history = apply_compression(plan, "what happened so far")
    body = await same_as_fresh()
    assert b"what happened so far" in body and b"answer 2" not in body
