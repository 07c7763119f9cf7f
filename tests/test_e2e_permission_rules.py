"""Permission rules end to end, over the real server: allow, ask and deny from the user's
config.toml and from the project's `.hermes/config.toml`, `.claude/settings.json` and
`.claude/settings.local.json`; deny in yolo (the model told why); a repository's allow rules
ignored until the user trusts them; "Always allow … in this project" across a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider
from tests.support.server_setup import ServerSetup, write_config
from tests.support.tool_turns import asks, said, tool_result

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER_RULES = """
[permissions]
allow = ["Bash(echo user-allowed:*)"]
ask = ["Read(secret/**)"]
deny = ["Bash(touch user-denied:*)"]
"""
SERVER_SETUP = ServerSetup(config_toml=USER_RULES)


async def test_the_users_rules_allow_ask_and_deny(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "secret").mkdir()
    (project / "secret" / "key.txt").write_text("k\n")
    sid = await client.session_in_mode(project, "ask")
    assert not await asks(client, fake, sid, "terminal", {"command": "echo user-allowed hi"})
    assert await asks(client, fake, sid, "terminal", {"command": "echo something-else"})
    # every part of a compound command must fit an allow rule
    assert await asks(client, fake, sid, "terminal", {"command": "echo user-allowed a; echo b > out.txt"})
    assert await asks(client, fake, sid, "terminal", {"command": "echo user-allowed $(cat secret/key.txt)"})
    assert await asks(client, fake, sid, "terminal", {"command": "echo user-allowed > run.sh"})
    assert not await asks(client, fake, sid, "terminal", {"command": "echo user-allowed 2>&1"})

    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    assert await asks(client, fake, sid, "read_file", {"path": "secret/key.txt"})
    reason = client.permission_requests[-1]["_meta"]["hermes"]["reason"]
    assert "Read(secret/**)" in reason and "config.toml" in reason

    # deny holds in yolo, through wrappers, and the model reads which rule and where
    for command in ("touch user-denied now", "env A=1 touch user-denied now"):
        assert not await asks(client, fake, sid, "terminal", {"command": command})
        assert "`Bash(touch user-denied:*)` (your config.toml) denies" in tool_result(fake)
    assert not (project / "now").exists()


async def test_project_deny_and_ask_apply_at_once_and_its_allow_only_once_trusted(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / ".hermes").mkdir()
    (project / ".claude").mkdir()
    (project / ".hermes" / "config.toml").write_text(
        '[permissions]\ndeny = ["Edit(protected/**)"]\nallow = ["Bash(echo hermes-allowed:*)"]\n'
    )
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"ask": ["Bash(echo ask-me:*)"], "allow": ["Bash(echo claude-allowed)"]}})
    )
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"permissions": {"allow": ["Bash(echo local-allowed:*)"]}}))
    sid = await client.session_in_mode(project, "yolo")

    assert not await asks(client, fake, sid, "write_file", {"path": "protected/a.txt", "content": "x"})
    assert "`Edit(protected/**)` (.hermes/config.toml) denies" in tool_result(fake)
    assert not (project / "protected" / "a.txt").exists()
    assert await asks(client, fake, sid, "terminal", {"command": "echo ask-me please"})

    await client.request("session/set_mode", {"sessionId": sid, "modeId": "ask"})
    for command in ("echo hermes-allowed 1", "echo claude-allowed", "echo local-allowed 2"):
        assert await asks(client, fake, sid, "terminal", {"command": command})  # not trusted yet

    shown = await said(client, sid, "/permissions")
    assert "`.claude/settings.local.json`: `Bash(echo local-allowed:*)`" in shown  # as written
    assert "/permissions trust" in shown
    assert "Trusted the allow rules and hooks of" in await said(client, sid, "/permissions trust")
    for command in ("echo hermes-allowed 1", "echo claude-allowed", "echo local-allowed 2"):
        assert not await asks(client, fake, sid, "terminal", {"command": command})

    # a changed file is untrusted again (a new session reads it afresh)
    local.write_text(json.dumps({"permissions": {"allow": ["Bash(echo local-allowed:*)", "Bash"]}}))
    again = await client.session_in_mode(project, "ask")
    assert await asks(client, fake, again, "terminal", {"command": "echo local-allowed 3"})
    assert await asks(client, fake, again, "terminal", {"command": "echo anything"})
    assert not await asks(client, fake, again, "terminal", {"command": "echo hermes-allowed 4"})


async def test_allow_in_this_project_survives_a_restart_and_can_be_revoked(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env = server_env(tmp_path / "home", fake)
    write_config(env, "")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with connected(env, permission="allow_project") as (_, client):
        sid = await client.session_in_mode(project, "ask")
        assert await asks(client, fake, sid, "terminal", {"command": "echo project-wide"})
        option = next(
            o for o in client.permission_requests[-1]["options"] if o["optionId"] == "allow_project"
        )
        assert option["name"] == "Always allow `echo` in this project"
    async with connected(env, permission="allow_once") as (_, client):
        sid = await client.session_in_mode(project, "ask")
        assert not await asks(client, fake, sid, "terminal", {"command": "echo project-wide again"})
        other = await client.session_in_mode(elsewhere, "ask")
        assert await asks(client, fake, other, "terminal", {"command": "echo project-wide"})
        shown = await said(client, sid, "/permissions")
        assert "1. `terminal:echo`" in shown
        assert "No longer always allowed" in await said(client, sid, "/permissions revoke 1")
        fresh = await client.session_in_mode(project, "ask")
        assert await asks(client, fake, fresh, "terminal", {"command": "echo project-wide"})
