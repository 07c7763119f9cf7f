"""session/prompt end to end: streaming, stop reasons, content blocks, one turn at a time."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 32).decode()


SERVER_SETUP = ServerSetup(settings={"HERMES_ACP_MAX_ITERATIONS": "2", "HERMES_ACP_MAX_RETRIES": "1"})


async def test_text_and_thoughts_stream_as_chunks(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    # the model goes on after its first piece of text once the editor has shown it
    reply = Reply(
        text="Hello there, world.",
        reasoning="Let me think about greetings.",
        chunk_size=4,
        hold_after_first_text=True,
    )
    fake.script([reply])
    prompt = client.start_prompt(session, "Say hello")
    await client.wait_for(lambda: client.text(session) == "Hell")
    fake.release_stream()
    assert await prompt == {"stopReason": "end_turn"}
    chunks = client.session_updates(session, "agent_message_chunk")
    assert len(chunks) > 1  # streamed, not one blob
    assert client.text(session) == "Hello there, world."
    assert client.text(session, "agent_thought_chunk") == "Let me think about greetings."
    thought_at = client.updates.index(
        next(p for p in client.updates if p["update"]["sessionUpdate"] == "agent_thought_chunk")
    )
    text_at = client.updates.index(
        next(
            p
            for p in client.updates
            if p["update"]["sessionUpdate"] == "agent_message_chunk" and p["sessionId"] == session
        )
    )
    assert thought_at < text_at
    usage = client.session_updates(session, "usage_update")[-1]
    assert usage["size"] > 0 and usage["used"] >= 0
    title = client.session_updates(session, "session_info_update")[0]
    assert title["title"] == "Say hello"


async def test_the_request_carries_the_user_text(client: AcpClient, fake: FakeProvider, session: str) -> None:
    fake.script([Reply(text="ok")])
    before = len(fake.requests)
    await client.prompt(session, "What is in this repository?")
    body = fake.requests[before].body
    assert body["messages"][-1]["role"] == "user"
    assert "What is in this repository?" in str(body["messages"][-1]["content"])


@pytest.mark.parametrize(
    ("replies", "stop"),
    [
        ([Reply(reasoning="hmm " * 20, finish_reason="length")], "max_tokens"),
        ([Reply(text="I can't help with that.", finish_reason="refusal")], "refusal"),
        (
            [
                Reply(tool_calls=[ToolCallSpec("list_files", {"path": "."})]),
                Reply(tool_calls=[ToolCallSpec("list_files", {"path": "."})]),
                Reply(text="Out of budget; here is where things stand."),
            ],
            "max_turn_requests",
        ),
    ],
)
async def test_stop_reasons_are_mapped(
    client: AcpClient, fake: FakeProvider, session: str, replies: list[Reply], stop: str
) -> None:
    fake.script(replies)
    assert await client.prompt(session, "go") == {"stopReason": stop}


async def test_a_provider_failure_is_shown_and_the_turn_ends_normally(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    """Chosen behaviour: the error text appears where the answer would, and the prompt
    answers end_turn (a JSON-RPC error reads as an agent crash in editors)."""
    fake.script([Reply.server_error(), Reply.server_error(), Reply.server_error()])
    assert await client.prompt(session, "hello?") == {"stopReason": "end_turn"}
    shown = client.text(session)
    assert "The model provider failed" in shown
    fake.script([Reply(text="Back again.")])
    assert await client.prompt(session, "and now?") == {"stopReason": "end_turn"}
    assert client.text(session).endswith("Back again.")


async def test_images_and_resources_reach_the_model(
    client: AcpClient, fake: FakeProvider, session: str, tmp_path: Path
) -> None:
    notes = tmp_path / "project" / "notes.md"
    notes.write_text("line one\nline two\n")
    fake.script([Reply(text="Seen.")])
    before = len(fake.requests)
    blocks = [
        {"type": "text", "text": "Look at these"},
        {"type": "image", "mimeType": "image/png", "data": PNG},
        {"type": "resource_link", "uri": notes.as_uri(), "name": "notes.md"},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///embedded.py",
                "text": "print('embedded')",
                "mimeType": "text/x-python",
            },
        },
    ]
    assert await client.prompt(session, blocks) == {"stopReason": "end_turn"}
    content = fake.requests[before].body["messages"][-1]["content"]
    as_text = json.dumps(content)
    assert "image_url" in as_text and PNG in as_text
    assert "line two" in as_text  # the linked file was read (through the editor's fs)
    assert "print('embedded')" in as_text
    assert ("fs/read_text_file", {"sessionId": session, "path": str(notes)}) in [
        (m, {k: p[k] for k in ("sessionId", "path")}) for m, p in client.calls if m == "fs/read_text_file"
    ]


async def test_a_title_is_what_the_user_typed_not_the_files_they_attached(
    client: AcpClient, fake: FakeProvider, session: str, tmp_path: Path
) -> None:
    # Editors attach the current file to every prompt (our VS Code view does): a title made
    # from the message the model reads would be the file's text.
    app = tmp_path / "project" / "app.py"
    app.write_text("def main():\n    print('hi')\n")
    fake.script([Reply(text="Done.")])
    blocks = [
        {"type": "resource_link", "uri": app.as_uri(), "name": "app.py"},
        {"type": "text", "text": "Fix the greeting"},
        {"type": "resource", "resource": {"uri": app.as_uri() + "#L1-L2", "text": "def main():"}},
    ]
    assert await client.prompt(session, blocks) == {"stopReason": "end_turn"}
    assert [u["title"] for u in client.session_updates(session, "session_info_update")] == [
        "Fix the greeting"
    ]


async def test_a_second_prompt_while_one_runs_waits_for_it(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    fake.script([Reply(text="slow " * 40, chunk_size=5, chunk_delay=0.02), Reply(text="next")])
    first = client.start_prompt(session, "slow one")
    await client.wait_for(lambda: client.session_updates(session, "agent_message_chunk"))
    second = client.start_prompt(session, "impatient")
    assert (await first)["stopReason"] == "end_turn"
    assert await second == {"stopReason": "end_turn"}
    assert client.text(session).endswith("slow next")  # one after the other, not interleaved


async def test_sessions_run_turns_independently(
    client: AcpClient, fake: FakeProvider, tmp_path: Path
) -> None:
    sessions = [(await client.new_session(tmp_path))["sessionId"] for _ in range(2)]
    fake.script([Reply(text="one", chunk_delay=0.01), Reply(text="two", chunk_delay=0.01)])
    results = await asyncio.gather(*(client.prompt(s, "hi") for s in sessions))
    assert [r["stopReason"] for r in results] == ["end_turn", "end_turn"]
    assert sorted(client.text(s) for s in sessions) == ["one", "two"]


async def test_a_retry_notice_is_a_sentence_any_markdown_client_shows_whole(
    client: AcpClient, fake: FakeProvider, session: str
) -> None:
    """Toad showed the notice as "1)". It is a thought message of its own: one plain
    CommonMark paragraph (no emphasis, escapes or list markers to misparse), a sentence."""
    from markdown_it import MarkdownIt

    fake.script([Reply.rate_limited(), Reply(text="Made it.")])
    assert await client.prompt(session, "hello?") == {"stopReason": "end_turn"}
    [notice] = [
        c for c in client.session_updates(session, "agent_thought_chunk") if "retrying" in json.dumps(c)
    ]
    text = notice["content"]["text"]
    tokens = MarkdownIt("commonmark").parse(text)
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"], tokens
    inline = tokens[1]
    assert {child.type for child in inline.children or []} == {"text"}, inline.children
    assert inline.content == text.strip()
    assert text.strip()[0].isupper() and text.strip().endswith(".")
    assert text.startswith("Rate limited by the model provider; retrying in") and "attempt 1 of 1" in text
    assert notice.get("messageId")  # its own message, not glued to the model's thinking
    assert client.text(session).endswith("Made it.")
