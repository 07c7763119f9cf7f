"""Tool calls end to end: lifecycle and diffs, permissions, commands in editor and local terminals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, PLAIN_CAPABILITIES, AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


def tool_turn(*calls: ToolCallSpec, answer: str = "Done.") -> list[Reply]:
    return [Reply(tool_calls=list(calls)), Reply(text=answer)]


def last_tool_result(fake: FakeProvider) -> str:
    """What the model was told about the last tool call (the last tool message it got)."""
    messages = fake.requests[-1].body["messages"]
    return next(m for m in reversed(messages) if m["role"] == "tool")["content"]


async def start(client: AcpClient, project: Path, mode: str = "ask", permission: str | None = None) -> str:
    """A session in `mode`; with `permission`, the client's answer to its permission requests."""
    if permission is not None:
        client.permission = permission
    sid = (await client.new_session(project))["sessionId"]
    if mode != "ask":
        await client.request("session/set_mode", {"sessionId": sid, "modeId": mode})
    return sid


async def test_tool_call_lifecycle_with_a_diff(client: AcpClient, fake: FakeProvider, project: Path) -> None:
    fake.script(
        tool_turn(ToolCallSpec("write_file", {"path": "src/app.py", "content": "print('hi')\n"}, id="call_w"))
    )
    sid = await start(client, project)
    assert await client.prompt(sid, "create app.py") == {"stopReason": "end_turn"}
    target = project / "src" / "app.py"
    assert target.read_text() == "print('hi')\n"
    assert (
        "fs/write_text_file",
        {"sessionId": sid, "path": str(target), "content": "print('hi')\n"},
    ) in client.calls

    updates = client.tool_updates("call_w")
    first = updates[0]
    assert first["sessionUpdate"] == "tool_call"
    assert first["status"] == "pending"
    assert first["kind"] == "edit"
    assert "src/app.py" in first["title"]
    assert first["rawInput"] == {"path": "src/app.py", "content": "print('hi')\n"}
    assert first["locations"][0]["path"] == str(target)
    statuses = [u.get("status") for u in updates if u.get("status")]
    assert statuses == ["pending", "in_progress", "completed"]
    final = updates[-1]
    diff = next(c for c in final["content"] if c["type"] == "diff")
    assert diff == {"type": "diff", "path": str(target), "oldText": None, "newText": "print('hi')\n"}

    # the permission request was about the card the editor already shows
    request = client.permission_requests[-1]
    assert request["toolCall"]["toolCallId"] == "call_w"
    assert {o["optionId"] for o in request["options"]} == {
        "allow_once",
        "allow_always",
        "allow_project",
        "reject_once",
        "reject_always",
    }
    assert {o["kind"] for o in request["options"]} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }


async def test_an_edit_of_an_existing_file_carries_old_and_new_text(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    target = project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    fake.script(
        tool_turn(
            ToolCallSpec("patch", {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}, id="call_p")
        )
    )
    sid = await start(client, project, mode="accept_edits")
    assert await client.prompt(sid, "fix notes") == {"stopReason": "end_turn"}
    assert target.read_text() == "alpha\ngamma\n"
    assert (
        not client.permission_requests or client.permission_requests[-1]["toolCall"]["toolCallId"] != "call_p"
    )
    final = client.tool_updates("call_p")[-1]
    assert final["status"] == "completed"
    diff = next(c for c in final["content"] if c["type"] == "diff")
    assert (diff["oldText"], diff["newText"]) == ("alpha\nbeta\n", "alpha\ngamma\n")


def _write(name: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec("write_file", {"path": name, "content": f"{name}\n"}, id=call_id)


@pytest.mark.parametrize("option", ["allow_once", "allow_always"])
async def test_allowing_runs_the_tool(
    client: AcpClient, fake: FakeProvider, project: Path, option: str
) -> None:
    sid = await start(client, project, permission=option)
    fake.script(tool_turn(_write("a.txt", "call_1")) + tool_turn(_write("a.txt", "call_2")))
    await client.prompt(sid, "write a")
    assert (project / "a.txt").exists()
    asked = len(client.permission_requests)
    await client.prompt(sid, "write a again")
    # "always" covers the same kind of call for the rest of the session; "once" asks again
    assert len(client.permission_requests) == asked + (1 if option == "allow_once" else 0)
    assert client.tool_updates("call_2")[-1]["status"] == "completed"


@pytest.mark.parametrize("option", ["reject_once", "reject_always"])
async def test_rejecting_tells_the_model_and_the_turn_goes_on(
    client: AcpClient, fake: FakeProvider, project: Path, option: str
) -> None:
    sid = await start(client, project, permission=option)
    fake.script(tool_turn(_write("r.txt", "call_r1"), answer="Understood, not writing."))
    assert await client.prompt(sid, "write r") == {"stopReason": "end_turn"}
    assert not (project / "r.txt").exists()
    assert client.tool_updates("call_r1")[-1]["status"] == "failed"
    assert "reject" in last_tool_result(fake).lower() or "denied" in last_tool_result(fake).lower()
    assert client.text(sid).endswith("Understood, not writing.")

    asked = len(client.permission_requests)
    client.permission = "allow_once"
    fake.script(tool_turn(_write("r.txt", "call_r2")))
    await client.prompt(sid, "write r, please")
    if option == "reject_always":
        assert len(client.permission_requests) == asked  # not asked again: rejected outright
        assert not (project / "r.txt").exists()
    else:
        assert len(client.permission_requests) == asked + 1
        assert (project / "r.txt").exists()


async def a_refused_write(
    client: AcpClient, fake: FakeProvider, project: Path, permission: str, name: str
) -> tuple[str, dict[str, Any]]:
    """A write the editor answers with `permission`, which must not let it happen: the
    session and the prompt's answer."""
    sid = await start(client, project, permission=permission)
    fake.script(tool_turn(_write(f"{name}.txt", f"call_{name}")))
    answer = await client.prompt(sid, f"write {name}")
    assert not (project / f"{name}.txt").exists()
    assert client.tool_updates(f"call_{name}")[-1]["status"] == "failed"
    return sid, answer


async def test_a_cancelled_permission_ends_the_turn_cancelled(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid, answer = await a_refused_write(client, fake, project, "cancelled", "c")
    assert answer == {"stopReason": "cancelled"}
    client.permission = "allow_once"
    fake.script([Reply(text="still here")])
    assert await client.prompt(sid, "hello") == {"stopReason": "end_turn"}


async def test_an_option_that_was_not_offered_counts_as_a_rejection(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    _, answer = await a_refused_write(client, fake, project, "definitely-not-an-option", "u")
    assert answer == {"stopReason": "end_turn"}


async def test_commands_run_in_the_editor_terminal(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = await start(client, project, mode="yolo")
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": "echo from-the-terminal; pwd"}, id="call_t")))
    assert await client.prompt(sid, "run it") == {"stopReason": "end_turn"}
    created = [p for m, p in client.calls if m == "terminal/create"]
    assert created and "echo from-the-terminal" in json.dumps(created[-1])
    assert created[-1]["cwd"] == str(project)
    terminal_id = next(tid for tid, t in client.terminals.items() if t.released) if client.terminals else None
    released = [p["terminalId"] for m, p in client.calls if m == "terminal/release"]
    assert terminal_id in released
    updates = client.tool_updates("call_t")
    embedded = [c for u in updates for c in u.get("content") or [] if c["type"] == "terminal"]
    assert embedded and embedded[0]["terminalId"] == terminal_id
    assert updates[-1]["status"] == "completed"
    result = last_tool_result(fake)
    assert "from-the-terminal" in result and str(project) in result


async def test_local_commands_use_zed_terminal_meta(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    client.capabilities = {**NO_CAPABILITIES, "_meta": {"terminal_output": True}}
    await client.initialize()
    sid = await start(client, project, mode="yolo")
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": "echo local-output"}, id="call_m")))
    before = len(client.calls)
    assert await client.prompt(sid, "run locally") == {"stopReason": "end_turn"}
    assert not [m for m, _ in client.calls[before:] if m.startswith(("terminal/", "fs/"))]
    metas: list[dict[str, Any]] = [u["_meta"] for u in client.tool_updates("call_m") if u.get("_meta")]
    info = next(m["terminal_info"] for m in metas if "terminal_info" in m)
    assert info["cwd"] == str(project)
    output = "".join(m["terminal_output"]["data"] for m in metas if "terminal_output" in m)
    assert "local-output" in output
    exit_info = next(m["terminal_exit"] for m in metas if "terminal_exit" in m)
    assert exit_info["exit_code"] == 0
    assert exit_info["terminal_id"] == info["terminal_id"]


async def test_without_terminal_meta_local_output_is_text(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    client.capabilities = PLAIN_CAPABILITIES | {"terminal": False}
    await client.initialize()
    sid = await start(client, project, mode="yolo")
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": "echo plain-output"}, id="call_x")))
    assert await client.prompt(sid, "run") == {"stopReason": "end_turn"}
    final = client.tool_updates("call_x")[-1]
    assert final["status"] == "completed"
    assert "plain-output" in json.dumps(final["content"])
    assert not any(u.get("_meta") for u in client.tool_updates("call_x"))


async def test_additional_directories_are_part_of_the_workspace(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-lib"
    shared.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    sid = (await client.new_session(project, additionalDirectories=[str(shared)]))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    inside_call = ToolCallSpec(
        "write_file", {"path": str(shared / "lib.py"), "content": "x = 1\n"}, id="call_in"
    )
    outside_call = ToolCallSpec(
        "write_file", {"path": str(outside / "no.py"), "content": "x = 2\n"}, id="call_out"
    )
    client.permission = "reject_once"
    fake.script([Reply(tool_calls=[inside_call]), Reply(tool_calls=[outside_call]), Reply(text="done")])
    asked = len(client.permission_requests)
    assert await client.prompt(sid, "write both") == {"stopReason": "end_turn"}
    assert (shared / "lib.py").read_text() == "x = 1\n"  # an extra root: no question in accept_edits
    assert not (outside / "no.py").exists()  # outside every root: asked, and rejected
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests[asked:]] == ["call_out"]
