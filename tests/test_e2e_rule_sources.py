"""Permission rules from each project file, and what no rule may loosen, over the real server.

Each of `.hermes/config.toml`, `.claude/settings.json` and `.claude/settings.local.json`
denies (in yolo, the model told which rule and where), asks (in yolo) and allows (only once
the user trusted it). And above every rule: an allow rule of the user's never lets a command
leave the sandbox, a dangerous command or a write outside the workspace through unasked, and
"Always allow … in this project" never covers a destructive form of the command it was given for.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider
from tests.support.server_setup import write_config
from tests.support.tool_turns import asks, said, tool_result

pytestmark = pytest.mark.asyncio(loop_scope="module")

RULES = {
    "deny": ["Bash(touch denied-here:*)"],
    "ask": ["Bash(echo ask-here:*)"],
    "allow": ["Bash(echo allowed-here:*)"],
}


def write_rules(project: Path, source: str) -> None:
    path = project / source
    path.parent.mkdir(parents=True, exist_ok=True)
    if source.endswith(".toml"):
        path.write_text("[permissions]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in RULES.items()))
    else:
        path.write_text(json.dumps({"permissions": RULES}))


@pytest.mark.parametrize(
    "source", [".hermes/config.toml", ".claude/settings.json", ".claude/settings.local.json"]
)
async def test_each_project_file_denies_and_asks_at_once_and_allows_once_trusted(
    client: AcpClient, fake: FakeProvider, project: Path, source: str
) -> None:
    write_rules(project, source)
    sid = await client.session_in_mode(project, "yolo")
    assert not await asks(client, fake, sid, "terminal", {"command": "touch denied-here now"})
    assert f"`Bash(touch denied-here:*)` ({source}) denies" in tool_result(fake)
    assert not (project / "denied-here").exists() and not (project / "now").exists()
    assert await asks(client, fake, sid, "terminal", {"command": "echo ask-here please"})
    reason = client.permission_requests[-1]["_meta"]["hermes"]["reason"]
    assert "Bash(echo ask-here:*)" in reason and source in reason

    await client.request("session/set_mode", {"sessionId": sid, "modeId": "ask"})
    assert await asks(client, fake, sid, "terminal", {"command": "echo allowed-here 1"})  # not trusted yet
    waiting = f"`Bash(echo allowed-here:*)` ({source}) would allow it once you trust it: /permissions trust"
    assert waiting in client.permission_requests[-1]["_meta"]["hermes"]["reason"]
    assert f"`{source}`: `Bash(echo allowed-here:*)`" in await said(client, sid, "/permissions")
    assert f"`{source}`" in await said(client, sid, "/permissions trust")
    assert not await asks(client, fake, sid, "terminal", {"command": "echo allowed-here 2"})
    assert await asks(client, fake, sid, "terminal", {"command": "echo something-else"})
    assert "would allow it" not in client.permission_requests[-1]["_meta"]["hermes"]["reason"]

    # the file changes: its allow rules wait again, and the question says so
    (project / source).write_text((project / source).read_text().replace("allowed-here", "allowed-now"))
    again = await client.session_in_mode(project, "ask")
    assert await asks(client, fake, again, "terminal", {"command": "echo allowed-now 3"})
    assert "`Bash(echo allowed-now:*)`" in client.permission_requests[-1]["_meta"]["hermes"]["reason"]


USER_ALLOWS_EVERYTHING = """
[permissions]
allow = ["Bash", "Edit", "Edit(//**)"]
"""


async def test_an_allow_rule_never_lets_a_command_out_of_the_sandbox_unasked(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env = server_env(tmp_path / "home", fake)
    write_config(env, USER_ALLOWS_EVERYTHING)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "keep.txt").write_text("x\n")
    async with connected(env, permission="reject_once") as (_, client):
        sid = await client.session_in_mode(project, "ask")
        assert not await asks(client, fake, sid, "terminal", {"command": "echo inside"})  # the rule holds
        assert not await asks(client, fake, sid, "write_file", {"path": "new.txt", "content": "x\n"})

        assert await asks(client, fake, sid, "terminal", {"command": "echo out", "unconfined": True})
        assert client.permission_requests[-1]["_meta"]["hermes"]["sandboxed"] is False
        assert await asks(client, fake, sid, "terminal", {"command": "rm -rf ~"})
        assert await asks(client, fake, sid, "terminal", {"command": "rm -rf ."})
        assert (project / "keep.txt").exists()
        target = str(outside / "planted.txt")
        assert await asks(client, fake, sid, "write_file", {"path": target, "content": "x\n"})
        assert not (outside / "planted.txt").exists()


async def test_always_in_this_project_never_covers_a_destructive_form(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env = server_env(tmp_path / "home", fake)
    write_config(env, "")
    for name in ("a.txt", "b.txt"):
        (project / name).write_text("x\n")
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("x\n")
    async with connected(env, permission="allow_project") as (_, client):
        sid = await client.session_in_mode(project, "ask")
        assert await asks(client, fake, sid, "terminal", {"command": "rm a.txt"})
    async with connected(env, permission="reject_once") as (_, client):
        sid = await client.session_in_mode(project, "ask")
        assert not await asks(client, fake, sid, "terminal", {"command": "rm b.txt"})  # it stuck
        assert not (project / "b.txt").exists()
        for command in ("rm -rf src", "rm -r src", "rm *.py src/*.py", "rm -rf $PWD"):
            assert await asks(client, fake, sid, "terminal", {"command": command}), command
        assert (project / "src" / "main.py").exists()
