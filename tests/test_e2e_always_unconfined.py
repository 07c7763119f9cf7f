"""An "always" for a command outside the sandbox covers what the user approved: the files
it runs as they were. The model rewriting them (unasked, in auto) makes the next
unconfined run ask again; where what runs cannot be pinned down, no "always" is offered,
and an "always" answer anyway is taken as once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

LOCAL = PLAIN_CAPABILITIES | {"terminal": False, "fs": {}}


class User:
    """Answers "always" to the first question, rejects every later one, and keeps them all."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def __call__(self, params: dict[str, Any]) -> str:
        self.asked.append(params)
        return "allow_always" if len(self.asked) == 1 else "reject_once"


def unconfined(command: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec("terminal", {"command": command, "unconfined": True}, id=call_id)


def turn(*calls: ToolCallSpec) -> list[Reply]:
    return [Reply(tool_calls=list(calls)), Reply(text="Done.")]


def evil(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran outside')\n"


async def run_turns(client: AcpClient, project: Path, prompts: int) -> None:
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
    for i in range(prompts):
        assert await client.prompt(sid, f"step {i}") == {"stopReason": "end_turn"}


@pytest.mark.parametrize("rewritten", ["build.py", "helpers.py"])
async def test_always_for_an_unconfined_script_does_not_cover_its_rewrite(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path, rewritten: str
) -> None:
    marker = tmp_path / "escaped"
    (project / "build.py").write_text("import helpers\nprint('built', helpers.VERSION)\n")
    (project / "helpers.py").write_text("VERSION = 1\n")
    fake.script(
        [
            *turn(unconfined("python3 build.py", "first")),
            *turn(unconfined("python3 build.py", "again")),  # unchanged: the "always" holds
            *turn(
                ToolCallSpec("write_file", {"path": rewritten, "content": evil(marker)}, id="rewrite"),
                unconfined("python3 build.py", "changed"),
            ),
        ]
    )
    user = User()
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        await run_turns(client, project, 3)
    asked = [p["toolCall"]["toolCallId"] for p in user.asked]
    assert asked == ["first", "changed"]  # the rewrite (auto) asked nothing; the changed run did
    always = [o for o in user.asked[0]["options"] if o["optionId"] == "allow_always"]
    assert always and "unchanged" in always[0]["name"], user.asked[0]["options"]
    assert not marker.exists()


@pytest.mark.parametrize("command", ["npm run build", "python3 -m build", "cd sub && make"])
async def test_no_always_is_offered_where_what_runs_cannot_be_pinned(
    fake: FakeProvider, home: Path, project: Path, command: str
) -> None:
    (project / "sub").mkdir()
    fake.script([*turn(unconfined(command, "first")), *turn(unconfined(command, "second"))])
    user = User()  # answers "always" anyway: a client may send what was not offered
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        await run_turns(client, project, 2)
    assert "allow_always" not in {o["optionId"] for o in user.asked[0]["options"]}
    assert [p["toolCall"]["toolCallId"] for p in user.asked] == ["first", "second"]
