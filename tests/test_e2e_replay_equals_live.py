"""A replayed thread is the live one: a conversation recorded through the real server (an
edit with its diff, a command with output, a failed tool, a command killed by a cancel, a
prompt with @-mentions, a /steer), then `session/load`ed by a new process, shows the same
thread the editor drew while it happened.

Both threads are folded the way an editor draws them (`drawn`): chunks of one message
joined, a tool card merged from all its updates at the place it first appeared. Left out,
by name: the ids that only group chunks (`messageId`), the updates that are the session's
state rather than its conversation (usage, title, commands, plan), and status lines
(`_meta.hermes.status`: a retry or the sandbox notice is the moment's, not kept). One
difference is by design: a mention the editor embedded (a `resource`) comes back as a
link to the same file (`as_mention`): its text is in the history once, for the model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")

FS = {"readTextFile": True, "writeTextFile": True}
# The editor's own terminals cannot be replayed (they end with the process that made
# them); these two clients show command output the other two ways: as text, and as
# Zed's `_meta` terminal.
CLIENTS = {
    "text output": {"fs": FS},
    "meta terminal": {"fs": FS, "_meta": {"terminal_output": True}},
}
CONVERSATION_ONLY = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}
)

Entry = tuple[str, Any]  # ("prompt", blocks) or ("update", update)


class HeldPermission:
    """Answers permission requests at once, except the one for `held`, answered on release."""

    def __init__(self, client: AcpClient, held: str) -> None:
        self.held = held
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        client.permission = self.answer

    async def answer(self, params: dict[str, Any]) -> str:
        if params["toolCall"]["toolCallId"] == self.held:
            self.asked.set()
            await self.release.wait()
        return "allow_once"


class Recorder:
    """The live thread as the editor has it: what it sent, where it sent it, and the updates."""

    def __init__(self, client: AcpClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.prompts: list[tuple[int, list[dict[str, Any]]]] = []

    def prompt(self, blocks: list[dict[str, Any]] | str) -> asyncio.Task[dict[str, Any]]:
        blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else blocks
        self.prompts.append((len(self.client.updates), blocks))
        return self.client.start_prompt(self.session_id, blocks)

    def entries(self) -> list[Entry]:
        entries: list[Entry] = []
        prompts = list(self.prompts)
        for index, params in enumerate(self.client.updates):
            while prompts and prompts[0][0] <= index:
                entries.append(("prompt", prompts.pop(0)[1]))
            if params["sessionId"] == self.session_id:
                entries.append(("update", params["update"]))
        entries += [("prompt", blocks) for _, blocks in prompts]
        return entries


def drawn(entries: list[Entry]) -> list[dict[str, Any]]:
    """The thread as an editor draws it from these prompts and updates."""
    thread: list[dict[str, Any]] = []
    cards: dict[str, dict[str, Any]] = {}
    last_message: tuple[str, Any] | None = None  # (kind, messageId) of the message being extended
    for what, item in entries:
        if what == "prompt":
            thread.append({"user": [as_mention(block) for block in item]})
            last_message = None
            continue
        kind = item["sessionUpdate"]
        if kind not in CONVERSATION_ONLY or (item.get("_meta") or {}).get("hermes", {}).get("status"):
            continue
        if kind in ("tool_call", "tool_call_update"):
            last_message = None
            card = cards.get(item["toolCallId"])
            if card is None:
                card = cards[item["toolCallId"]] = {"card": item["toolCallId"]}
                thread.append(card)
            merge_card(card, item)
            continue
        key = (kind, item.get("messageId"))
        if last_message != key:
            thread.append({kind: []})
            last_message = key
        blocks = thread[-1][kind]
        block = item["content"]
        if kind == "user_message_chunk":
            blocks.append(block)
        elif blocks:
            blocks[0] = {"type": "text", "text": blocks[0]["text"] + block["text"]}
        else:
            blocks.append(block)
    # A user message arrives as chunks on replay and as a prompt live: the same bubble.
    return [
        {"user": entry.pop("user_message_chunk")} if "user_message_chunk" in entry else entry
        for entry in thread
    ]


def merge_card(card: dict[str, Any], update: dict[str, Any]) -> None:
    for field in ("title", "kind", "status", "rawInput", "rawOutput", "locations", "content"):
        if field in update:
            card[field] = update[field]
    meta = update.get("_meta") or {}
    if "terminal_info" in meta:
        card["terminal_info"] = meta["terminal_info"]
    if "terminal_output" in meta:
        card["terminal_output"] = card.get("terminal_output", "") + meta["terminal_output"]["data"]
    if "terminal_exit" in meta:
        card["terminal_exit"] = meta["terminal_exit"]


def as_mention(block: dict[str, Any]) -> dict[str, Any]:
    """An embedded resource as the replay shows it: a link to the same file."""
    if block["type"] != "resource":
        return block
    uri = block["resource"]["uri"]
    link = {"type": "resource_link", "uri": uri, "name": uri.rsplit("/", 1)[-1]}
    if "mimeType" in block["resource"]:
        link["mimeType"] = block["resource"]["mimeType"]
    return link


def output_shown(client: AcpClient, call_id: str) -> str:
    """A command's output so far, as text on its card or in its `_meta` terminal."""
    shown = ""
    for update in client.tool_updates(call_id):
        for content in update.get("content") or ():
            if content["type"] == "content":
                shown += content["content"].get("text", "")
        data = (update.get("_meta") or {}).get("terminal_output")
        if data:
            shown += data["data"]
    return shown


async def record_a_conversation(client: AcpClient, fake: FakeProvider, project: Path) -> tuple[str, Recorder]:
    notes = project / "notes.txt"
    notes.write_text("teh first line\n")
    (project / "guide.md").write_text("# Guide\nUse tabs.\n")
    session_id = (await client.new_session(project))["sessionId"]
    live = Recorder(client, session_id)
    held = HeldPermission(client, "call_held")
    fake.script(
        [
            Reply(
                reasoning="A typo to fix.",
                text="I'll fix the typo.",
                tool_calls=[
                    ToolCallSpec(
                        "write_file", {"path": "notes.txt", "content": "the first line\n"}, id="call_edit"
                    )
                ],
            ),
            Reply(tool_calls=[ToolCallSpec("terminal", {"command": "printf 'one\\ntwo\\n'"}, id="call_cmd")]),
            Reply(tool_calls=[ToolCallSpec("read_file", {"path": "missing.txt"}, id="call_missing")]),
            Reply(text="Fixed; the command printed two lines."),
            # the second prompt: an edit the user takes a while to approve, steered meanwhile
            Reply(
                tool_calls=[
                    ToolCallSpec("write_file", {"path": "more.txt", "content": "x\n"}, id="call_held")
                ]
            ),
            Reply(text="Done, and I read your note."),
            # the third: a command that runs until the user stops the turn
            Reply(
                tool_calls=[ToolCallSpec("terminal", {"command": "echo started; sleep 600"}, id="call_loop")]
            ),
        ]
    )
    mention: list[dict[str, Any]] = [
        {"type": "text", "text": "Fix the typo in "},
        {"type": "resource_link", "uri": notes.as_uri(), "name": "notes.txt"},
        {"type": "text", "text": " following "},
        {
            "type": "resource",
            "resource": {
                "uri": (project / "guide.md").as_uri(),
                "mimeType": "text/markdown",
                "text": "# Guide\n",
            },
        },
    ]
    assert await live.prompt(mention) == {"stopReason": "end_turn"}

    second = live.prompt("Add more.txt")
    await asyncio.wait_for(held.asked.wait(), 60)
    assert await live.prompt("/steer say that you read this") == {"stopReason": "end_turn"}
    held.release.set()
    assert await second == {"stopReason": "end_turn"}

    third = live.prompt("Run the long job")
    await client.wait_for(lambda: "started" in output_shown(client, "call_loop"))
    await client.cancel(session_id)
    assert await third == {"stopReason": "cancelled"}
    return session_id, live


@pytest.mark.parametrize("capabilities", CLIENTS.values(), ids=CLIENTS.keys())
async def test_a_loaded_session_shows_the_thread_the_editor_drew_live(
    fake: FakeProvider, server_home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    env = server_env(server_home, fake)
    async with connected(env, capabilities) as (server, client):
        session_id, live = await record_a_conversation(client, fake, project)
        live_thread = drawn(live.entries())
        server.assert_clean()

    async with connected(env, capabilities) as (server, client):
        params = {"sessionId": session_id, "cwd": str(project), "mcpServers": []}
        await client.request("session/load", params)
        replayed = drawn([("update", params["update"]) for params in client.updates])
        server.assert_clean()

    # The cases that differed, named so a failure says which one broke.
    by_card = {entry["card"]: entry for entry in replayed if "card" in entry}
    assert by_card["call_loop"]["status"] == "failed"
    assert by_card["call_edit"]["content"][0]["type"] == "diff"
    assert replayed[0]["user"][1]["type"] == "resource_link"
    assert {"user": [{"type": "text", "text": "/steer say that you read this"}]} in replayed
    assert replayed == live_thread


async def test_a_steer_answered_while_the_answer_streams_is_a_message_of_its_own(
    fake: FakeProvider, server_home: Path, project: Path
) -> None:
    """The answer to `/steer` arrives between two chunks of the model's answer: with no
    messageId of its own, an editor ran the three together ("…the first step.Added to…")."""
    fake.script(
        [
            Reply(text="Working on the first step. Then the rest.", hold_after_first_text=True),
            Reply(text="Noted."),
        ]
    )
    async with connected(server_env(server_home, fake), CLIENTS["text output"]) as (server, client):
        session_id = (await client.new_session(project))["sessionId"]
        turn = client.start_prompt(session_id, "Go")
        await client.wait_for(lambda: client.text(session_id))
        assert await client.prompt(session_id, "/steer use tabs") == {"stopReason": "end_turn"}
        fake.release_stream()
        assert await turn == {"stopReason": "end_turn"}
        server.assert_clean()
    chunks = client.session_updates(session_id, "agent_message_chunk")
    [ack] = [chunk for chunk in chunks if chunk["content"]["text"].startswith("Added to the running turn")]
    answer_ids = {chunk.get("messageId") for chunk in chunks if chunk is not ack}
    assert ack.get("messageId") and ack["messageId"] not in answer_ids
    # Drawn by messageId, the answer stays apart from the acknowledgement.
    texts = [entry["agent_message_chunk"][0]["text"] for entry in drawn([("update", c) for c in chunks])]
    assert ack["content"]["text"] in texts
    assert (
        "".join(t for t in texts if t != ack["content"]["text"])
        == "Working on the first step. Then the rest.Noted."
    )
