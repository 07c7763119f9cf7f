"""What the user sees when asked and after answering: the diff before deciding, patches
that cannot apply failing without a question, "always" options in the user's words,
"Rejected" on a rejected card, and a todo card that does not repeat the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


def tool_messages(fake: FakeProvider) -> list[str]:
    return [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]


async def test_the_permission_request_for_an_edit_shows_the_diff(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    target = project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    patch = {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}
    fake.script([Reply(tool_calls=[ToolCallSpec("patch", patch, id="p1")]), Reply(text="done")])
    sid = (await client.new_session(project))["sessionId"]
    await client.prompt(sid, "fix the notes")
    [asked] = [r for r in client.permission_requests if r["toolCall"]["toolCallId"] == "p1"]
    assert asked["toolCall"]["content"] == [
        {"type": "diff", "path": str(target), "oldText": "alpha\nbeta\n", "newText": "alpha\ngamma\n"}
    ]
    names = {o["optionId"]: o["name"] for o in asked["options"]}
    assert names["allow_always"] == "Always allow edits in this session"
    assert names["reject_always"] == "Always reject edits in this session"
    assert "patch" not in " ".join(names.values())


async def test_a_patch_that_cannot_apply_fails_before_anyone_is_asked(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "notes.txt").write_text("alpha\nbeta\n")
    patch = {"path": "notes.txt", "old_text": "delta", "new_text": "gamma"}
    fake.script([Reply(tool_calls=[ToolCallSpec("patch", patch, id="p2")]), Reply(text="sorry")])
    sid = (await client.new_session(project))["sessionId"]
    asked = len(client.permission_requests)
    await client.prompt(sid, "fix the notes")
    assert len(client.permission_requests) == asked
    assert client.tool_updates("p2")[-1]["status"] == "failed"
    assert "old_text was not found in notes.txt" in tool_messages(fake)[-1]
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"


async def test_always_allowing_edits_covers_writes_and_patches(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "a.txt").write_text("one\n")
    client.permission = "allow_always"
    fake.script(
        [
            Reply(
                tool_calls=[ToolCallSpec("patch", {"path": "a.txt", "old_text": "one", "new_text": "two"})]
            ),
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "b.txt", "content": "new\n"})]),
            Reply(text="done"),
        ]
    )
    sid = (await client.new_session(project))["sessionId"]
    asked = len(client.permission_requests)
    await client.prompt(sid, "edit both")
    assert len(client.permission_requests) == asked + 1  # the write was covered by "edits"
    assert (project / "b.txt").read_text() == "new\n"


async def test_a_rejected_call_shows_rejected_and_the_model_gets_its_instruction(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    client.permission = "reject_once"
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "x.txt", "content": "x"}, id="w1")]),
            Reply(text="ok"),
        ]
    )
    sid = (await client.new_session(project))["sessionId"]
    await client.prompt(sid, "write x")
    final = client.tool_updates("w1")[-1]
    assert final["status"] == "failed"
    assert final["content"] == [{"type": "content", "content": {"type": "text", "text": "Rejected"}}]
    assert "The user rejected this call" in tool_messages(fake)[-1]
    # and a reload shows the same card
    mark = len(client.updates)
    await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
    replayed = [
        p["update"]
        for p in client.updates[mark:]
        if p["update"].get("toolCallId") == "w1" and p["update"]["sessionUpdate"] == "tool_call_update"
    ]
    assert replayed[-1]["content"] == final["content"]


async def test_the_todo_card_does_not_repeat_the_plan(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    items = [{"content": "read the code", "status": "in_progress"}, {"content": "fix the bug"}]
    fake.script([Reply(tool_calls=[ToolCallSpec("todo", {"items": items}, id="t1")]), Reply(text="on it")])
    sid = (await client.new_session(project))["sessionId"]
    await client.prompt(sid, "plan it")
    final = client.tool_updates("t1")[-1]
    assert final["status"] == "completed"
    assert "read the code" not in str(final.get("content", []))
    [plan] = client.session_updates(sid, "plan")
    assert [e["content"] for e in plan["entries"]] == ["read the code", "fix the bug"]
    assert "read the code" in tool_messages(fake)[-1]  # the model still reads it
