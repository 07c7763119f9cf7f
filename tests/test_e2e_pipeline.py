"""The tool pipeline never crashes a turn, and decides concurrency on the files really touched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, ZED_CAPABILITIES, AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(params=["zed", "plain"])
def client_capabilities(request: pytest.FixtureRequest) -> dict[str, Any]:
    """As Zed (files through the editor) and as a client without fs (files on disk)."""
    return ZED_CAPABILITIES if request.param == "zed" else PLAIN_CAPABILITIES


async def yolo_session(client: AcpClient, project: Path) -> str:
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    return sid


def tool_results(fake: FakeProvider) -> dict[str, str]:
    """What the model was told, per tool call id, in its last request."""
    messages = fake.requests[-1].body["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


BAD_PATHS = {"nul": "a\u0000b", "loop": "loop/inner.txt"}


@pytest.mark.parametrize("tool", ["read_file", "write_file", "patch"])
@pytest.mark.parametrize("bad", sorted(BAD_PATHS))
async def test_a_path_that_cannot_be_resolved_fails_the_call_not_the_turn(
    client: AcpClient, fake: FakeProvider, project: Path, tool: str, bad: str
) -> None:
    os.symlink("loop", project / "loop")  # loop -> loop: resolving it never ends
    path = BAD_PATHS[bad]
    arguments = {
        "read_file": {"path": path},
        "write_file": {"path": path, "content": "x"},
        "patch": {"path": path, "old_text": "a", "new_text": "b"},
    }[tool]
    fake.script([Reply(tool_calls=[ToolCallSpec(tool, arguments, id="call_bad")]), Reply(text="Noted.")])
    sid = await yolo_session(client, project)

    assert await client.prompt(sid, "touch the odd path") == {"stopReason": "end_turn"}

    final = client.tool_updates("call_bad")[-1]
    assert final["status"] == "failed"
    told = tool_results(fake)["call_bad"]
    assert "cannot resolve path" in told
    shown = "".join(c["content"]["text"] for c in final["content"] if c["type"] == "content")
    assert told in shown  # the card shows what the model read
    assert client.text(sid).endswith("Noted.")


SPELLINGS = ["./a.py", "sub/../a.py", "{abs}", "link.py"]


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_two_edits_of_one_file_by_different_spellings_both_land(
    client: AcpClient, fake: FakeProvider, project: Path, spelling: str
) -> None:
    target = project / "a.py"
    target.write_text("first = 1\nsecond = 2\n")
    (project / "sub").mkdir()
    os.symlink("a.py", project / "link.py")
    other = spelling.format(abs=target)
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCallSpec(
                        "patch",
                        {"path": "a.py", "old_text": "first = 1", "new_text": "first = 10"},
                        id="call_1",
                    ),
                    ToolCallSpec(
                        "patch",
                        {"path": other, "old_text": "second = 2", "new_text": "second = 20"},
                        id="call_2",
                    ),
                ]
            ),
            Reply(text="Both edited."),
        ]
    )
    sid = await yolo_session(client, project)

    assert await client.prompt(sid, "edit a.py twice") == {"stopReason": "end_turn"}

    assert target.read_text() == "first = 10\nsecond = 20\n"
    assert client.tool_updates("call_1")[-1]["status"] == "completed"
    assert client.tool_updates("call_2")[-1]["status"] == "completed"
    assert (project / "link.py").is_symlink()  # the edit went through the link, not over it


def linked_from_outside(tmp_path: Path, project: Path, name: str, content: str, link: str) -> Path:
    """A file outside the project with a hard link to it inside (`link`); the outside file."""
    secret = tmp_path / "elsewhere" / name
    secret.parent.mkdir()
    secret.write_text(content)
    os.link(secret, project / link)
    return secret


async def test_a_hard_link_to_a_file_outside_counts_as_outside_even_in_yolo(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    secret = linked_from_outside(
        tmp_path, project, "id_rsa", "PRIVATE KEY\n", "notes.txt"
    )  # what an unpacked archive or an injected command may leave
    client.permission = "reject_once"
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"}, id="call_read")]),
            Reply(
                tool_calls=[
                    ToolCallSpec("write_file", {"path": "notes.txt", "content": "x"}, id="call_write")
                ]
            ),
            Reply(text="I could not."),
        ]
    )
    sid = await yolo_session(client, project)

    assert await client.prompt(sid, "read and overwrite notes.txt") == {"stopReason": "end_turn"}

    asked = [r["toolCall"]["toolCallId"] for r in client.permission_requests if r["sessionId"] == sid]
    assert asked == ["call_read", "call_write"]
    assert secret.read_text() == "PRIVATE KEY\n"
    told = tool_results(fake)
    assert "PRIVATE KEY" not in told["call_read"]
    assert "rejected" in told["call_write"]


async def test_search_leaves_out_a_hard_linked_file_it_would_have_to_ask_for(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    linked_from_outside(tmp_path, project, "credentials", "token = PRIVATE-123\n", "config.ini")
    (project / "app.py").write_text("TOKEN_NAME = 'PRIVATE-placeholder'\n")
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("search", {"pattern": "PRIVATE"}, id="call_s")]), Reply(text="ok")]
    )
    sid = await yolo_session(client, project)

    assert await client.prompt(sid, "find PRIVATE") == {"stopReason": "end_turn"}

    told = tool_results(fake)["call_s"]
    assert "app.py:1:" in told
    assert "PRIVATE-123" not in told
    assert "config.ini" in told and "hard links" in told  # the model knows why, and can ask
