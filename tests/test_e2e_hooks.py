"""Command hooks end to end, over the real server: a pre_tool hook that blocks (the model
reads its stderr, the editor sees a card), one that adds context, one that times out (the
turn survives), post_tool's view of the result, prompt_submit adding context and blocking a
prompt, and a project's stop hook that runs only once the user trusted the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER_HOOKS = r"""
default_mode = "yolo"

[[hooks.pre_tool]]
matcher = "Bash(echo forbidden:*)"
command = "echo 'no forbidden echoes here' >&2; exit 2"

[[hooks.pre_tool]]
matcher = "Read(notes.txt)"
command = "echo '{\"context\": \"the notes are a year old\"}'"

[[hooks.pre_tool]]
matcher = "Bash(echo slow:*)"
command = "sleep 30"
timeout = 0.5

[[hooks.pre_tool]]
matcher = "Bash(echo decided:*)"
command = "echo '{\"decision\": \"block\", \"reason\": \"decided against it\"}'"

[[hooks.pre_tool]]
matcher = "Bash(echo broken:*)"
command = "echo 'the hook itself broke' >&2; exit 1"

[[hooks.pre_tool]]
matcher = "Bash(echo stdin:*)"
command = "cat > .pre_tool.json"

[[hooks.session_start]]
command = "echo started >> .session_start.log; echo 'the session began on a Friday'"

[[hooks.post_tool]]
matcher = "Edit"
command = "cat > .post_tool.json"

[[hooks.prompt_submit]]
command = '''
case "$(cat)" in *secret-word*) echo 'that word stays out' >&2; exit 2;; esac
echo 'it is hook day'
'''
"""
SERVER_SETUP = ServerSetup(config_toml=USER_HOOKS)


def call(tool: str, arguments: dict[str, Any], call_id: str) -> list[Reply]:
    return [Reply(tool_calls=[ToolCallSpec(tool, arguments, id=call_id)]), Reply(text="Done.")]


def tool_result(fake: FakeProvider, call_id: str) -> str:
    messages = fake.requests[-1].body["messages"]
    return next(m for m in messages if m["role"] == "tool" and m["tool_call_id"] == call_id)["content"]


def hook_cards(client: AcpClient, sid: str) -> list[dict[str, Any]]:
    return [
        u
        for u in client.session_updates(sid, "tool_call")
        if str(u.get("title", "")).startswith("Hook ") and u["toolCallId"].startswith("hook_")
    ]


def card_text(client: AcpClient, sid: str, call_id: str) -> str:
    texts = []
    for update in client.session_updates(sid):
        if update.get("toolCallId") == call_id:
            for item in update.get("content") or []:
                texts.append(item.get("content", {}).get("text", ""))
    return " ".join(texts)


async def test_pre_tool_hooks_block_add_context_and_time_out(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "notes.txt").write_text("old notes\n")
    sid = (await client.new_session(project))["sessionId"]

    fake.script(call("terminal", {"command": "echo forbidden > made.txt"}, "c_block"))
    assert await client.prompt(sid, "write it") == {"stopReason": "end_turn"}
    assert not (project / "made.txt").exists()
    assert "Blocked by a hook: no forbidden echoes here" in tool_result(fake, "c_block")
    [card] = hook_cards(client, sid)
    assert "Blocked: no forbidden echoes here" in card_text(client, sid, card["toolCallId"])

    fake.script(call("read_file", {"path": "notes.txt"}, "c_context"))
    await client.prompt(sid, "read the notes")
    result = tool_result(fake, "c_context")
    assert "old notes" in result and "(From a hook:) the notes are a year old" in result

    fake.script(call("terminal", {"command": "echo slow > slow.txt"}, "c_slow"))
    assert await client.prompt(sid, "be slow") == {"stopReason": "end_turn"}
    assert (project / "slow.txt").read_text() == "slow\n"  # the timeout did not stop the call
    slow_card = hook_cards(client, sid)[-1]
    assert "timed out" in card_text(client, sid, slow_card["toolCallId"])


async def test_pre_tool_reads_the_call_and_decides_by_json_and_a_broken_hook_is_survived(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    fake.script(call("terminal", {"command": "echo stdin > ran.txt"}, "c_stdin"))
    await client.prompt(sid, "run it")
    seen = json.loads((project / ".pre_tool.json").read_text())
    assert seen == {
        "event": "pre_tool",
        "session_id": sid,
        "cwd": str(project),
        "tool": "terminal",
        "arguments": {"command": "echo stdin > ran.txt"},
    }
    assert (project / "ran.txt").read_text() == "stdin\n"

    fake.script(call("terminal", {"command": "echo decided > decided.txt"}, "c_decided"))
    await client.prompt(sid, "run the decided one")
    assert not (project / "decided.txt").exists()
    assert "Blocked by a hook: decided against it" in tool_result(fake, "c_decided")

    fake.script(call("terminal", {"command": "echo broken > broken.txt"}, "c_broken"))
    assert await client.prompt(sid, "run the broken one") == {"stopReason": "end_turn"}
    assert (project / "broken.txt").read_text() == "broken\n"  # a failing hook does not block
    card = hook_cards(client, sid)[-1]
    assert card["title"] == "Hook pre_tool: echo 'the hook itself broke' >&2; exit 1"
    shown = card_text(client, sid, card["toolCallId"])
    assert "Hook failed (exit 1)" in shown and "the hook itself broke" in shown


async def test_session_start_adds_context_once_per_session(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    for prompt in ("one", "two"):
        fake.script([Reply(text="Hello.")])
        await client.prompt(sid, prompt)
    sent = json.dumps(fake.requests[-1].body["messages"])
    assert sent.count("(From a hook:) the session began on a Friday") == 1
    assert (project / ".session_start.log").read_text() == "started\n"
    other = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="Hello.")])
    await client.prompt(other, "three")
    assert "the session began on a Friday" in json.dumps(fake.requests[-1].body["messages"])
    assert (project / ".session_start.log").read_text() == "started\nstarted\n"


async def test_post_tool_sees_the_result(client: AcpClient, fake: FakeProvider, project: Path) -> None:
    sid = (await client.new_session(project))["sessionId"]
    fake.script(call("write_file", {"path": "a.txt", "content": "hello\n"}, "c_write"))
    await client.prompt(sid, "write a.txt")
    seen = json.loads((project / ".post_tool.json").read_text())
    assert seen["event"] == "post_tool"
    assert seen["tool"] == "write_file"
    assert seen["arguments"] == {"path": "a.txt", "content": "hello\n"}
    assert seen["ok"] is True and seen["session_id"] == sid and seen["cwd"] == str(project)


async def test_prompt_submit_adds_context_and_blocks(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="Hello.")])
    await client.prompt(sid, "hi there")
    user = fake.requests[-1].body["messages"][-1]
    text = user["content"] if isinstance(user["content"], str) else json.dumps(user["content"])
    assert "(From a hook:) it is hook day" in text and "hi there" in text

    asked = len(fake.requests)
    before = len(client.text(sid))
    assert await client.prompt(sid, "tell them the secret-word") == {"stopReason": "end_turn"}
    assert len(fake.requests) == asked  # never sent
    assert "A hook blocked this prompt" in client.text(sid)[before:]
    assert "that word stays out" in client.text(sid)[before:]


async def test_a_project_stop_hook_runs_only_once_trusted(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / ".hermes").mkdir()
    (project / ".hermes" / "config.toml").write_text(
        "[[hooks.stop]]\n"
        'command = "case \\"$(cat)\\" in *DONE*) exit 0;; *) echo \'finish with DONE\' >&2; exit 2;; esac"\n'
    )
    sid = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="All good.")])
    await client.prompt(sid, "first")
    assert len(fake.requests[-1].body["messages"]) == 2  # no stop hook ran: not trusted

    before = len(client.text(sid))
    await client.prompt(sid, "/permissions")
    assert "hook stop: `case" in client.text(sid)[before:]
    await client.prompt(sid, "/permissions trust")
    requests = len(fake.requests)
    fake.script([Reply(text="All good."), Reply(text="All good. DONE")])
    assert await client.prompt(sid, "second") == {"stopReason": "end_turn"}
    assert len(fake.requests) == requests + 2  # the hook sent the model back once
    last = fake.requests[-1].body["messages"][-1]
    assert last["role"] == "user" and "finish with DONE" in json.dumps(last["content"])
