"""Danger rules end to end: over the real server, a dangerous command asks even after an
"Always allow" on a harmless command of the same program, and in yolo."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


def run(command: str, call_id: str) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCallSpec("terminal", {"command": command}, id=call_id)]),
        Reply(text="Done."),
    ]


def asked_about(client: AcpClient, since: int) -> list[str]:
    return [r["toolCall"]["toolCallId"] for r in client.permission_requests[since:]]


async def test_always_allow_on_rm_file_does_not_cover_rm_rf_pwd(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    for name in ("tmpfile.txt", "other.txt", "keep.txt"):
        (project / name).write_text("x\n")
    (project / "subdir").mkdir()
    (project / "subdir" / "inner.txt").write_text("x\n")
    sid = await client.session_in_mode(project, "accept_edits")

    client.permission = "allow_always"
    asked = len(client.permission_requests)
    fake.script(run("rm tmpfile.txt", "call_rm_file"))
    await client.prompt(sid, "remove the temp file")
    assert asked_about(client, asked) == ["call_rm_file"]
    assert not (project / "tmpfile.txt").exists()

    # The "always" covers `rm` of another plain file: no question, the file goes.
    asked = len(client.permission_requests)
    fake.script(run("rm other.txt", "call_rm_other"))
    await client.prompt(sid, "remove the other file")
    assert asked_about(client, asked) == []
    assert not (project / "other.txt").exists()

    # It never covers a recursive or computed rm: each asks, and rejected, nothing goes.
    client.permission = "reject_once"
    for call_id, command in (
        ("call_rm_pwd", "rm -rf $PWD"),
        ("call_rm_r", "rm -r subdir"),
        ("call_glob", "rm *.txt"),
    ):
        asked = len(client.permission_requests)
        fake.script(run(command, call_id))
        assert await client.prompt(sid, f"run {command}") == {"stopReason": "end_turn"}
        assert asked_about(client, asked) == [call_id], command
        assert client.tool_updates(call_id)[-1]["status"] == "failed"
    assert (project / "keep.txt").exists()
    assert (project / "subdir" / "inner.txt").exists()


@pytest.mark.parametrize(
    "command",
    ['rm -rf "${HOME:?}"', "rm --recu --force ~", "$'\\x72m' -rf ~", "rm -rf {~,/nonexistent}"],
)
async def test_the_spellings_that_deleted_home_ask_in_yolo(
    client: AcpClient, fake: FakeProvider, project: Path, server_home: Path, command: str
) -> None:
    marker = server_home / "precious.txt"
    marker.write_text("still here\n")
    sid = await client.session_in_mode(project, "yolo")
    client.permission = "reject_once"
    asked = len(client.permission_requests)
    fake.script(run(command, "call_home"))
    assert await client.prompt(sid, "clean up") == {"stopReason": "end_turn"}
    assert asked_about(client, asked) == ["call_home"]
    assert marker.read_text() == "still here\n"


async def test_everyday_commands_still_run_without_asking_in_yolo(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "a.py").write_text("print(1)\n")
    sid = await client.session_in_mode(project, "yolo")
    asked = len(client.permission_requests)
    fake.script(run("ls -la && python3 -c 'print(6 * 7)' && rm a.py", "call_plain"))
    await client.prompt(sid, "look around")
    assert asked_about(client, asked) == []
    assert client.tool_updates("call_plain")[-1]["status"] == "completed"
    assert not (project / "a.py").exists()
