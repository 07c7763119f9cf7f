"""Round thirteen of issue 19's hidden red team: the newest features as attack surface.
Here: the project's own rules file, `.hermes/config.toml`. Its deny and ask rules apply at
once and its hooks once trusted, so a user keeps their guards for a repository there (`deny
= ["Edit(migrations/**)"]`, a `pre_tool` hook that blocks `git push`). The model rewrote it
unasked (`write_file` in auto, or a sandboxed command), and the next session had no guard:
the denied edit ran. Claude Code's `.claude/settings.json` was already guarded; ours was
not. End to end through the real server, a scripted model."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import LOCAL, git
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER_SETUP = ServerSetup(capabilities=LOCAL)

GUARDS = '[permissions]\ndeny = ["Edit(migrations/**)"]\n'
LOOSENED = "[permissions]\ndeny = []\n"
MIGRATION = "CREATE TABLE users (id INTEGER);\n"


def _drop_the_guards(how: str) -> ToolCallSpec:
    if how == "write_file":
        return ToolCallSpec("write_file", {"path": ".hermes/config.toml", "content": LOOSENED}, id="loosen")
    command = f"printf '{LOOSENED}' > .hermes/config.toml; echo rewrote"
    return ToolCallSpec("terminal", {"command": command}, id="loosen")


async def _turn(client: AcpClient, project: Path, call: ToolCallSpec, fake: FakeProvider) -> str:
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
    fake.script([Reply(tool_calls=[call]), Reply(text="Done.")])
    assert await client.prompt(sid, "tidy up") == {"stopReason": "end_turn"}
    return sid


@pytest.mark.parametrize("how", ["write_file", "a sandboxed command"])
async def test_the_model_cannot_drop_the_projects_deny_rules_unasked(
    client: AcpClient, fake: FakeProvider, project: Path, how: str
) -> None:
    (project / ".hermes").mkdir()
    (project / ".hermes" / "config.toml").write_text(GUARDS)
    (project / "migrations").mkdir()
    (project / "migrations" / "001.sql").write_text(MIGRATION)
    client.permission = "reject_once"

    await _turn(client, project, _drop_the_guards(how), fake)
    asked = [r["toolCall"]["toolCallId"] for r in client.permission_requests]
    # A later session of the project still has the user's guard.
    edit = ToolCallSpec(
        "write_file", {"path": "migrations/001.sql", "content": "DROP TABLE users;\n"}, id="e"
    )
    await _turn(client, project, edit, fake)

    assert (project / "migrations" / "001.sql").read_text() == MIGRATION
    assert (project / ".hermes" / "config.toml").read_text() == GUARDS
    if how == "write_file":  # asked, naming why, with no "always"
        assert asked == ["loosen"]
        request = client.permission_requests[0]
        assert "hermes-acp's own" in request["_meta"]["hermes"]["reason"]
        assert "allow_always" not in {o["optionId"] for o in request["options"]}


def _log(project: Path) -> str:
    return subprocess.run(["git", "log", "--oneline"], cwd=project, capture_output=True, text=True).stdout


IDENTITY = (
    "GIT_AUTHOR_NAME=m GIT_AUTHOR_EMAIL=m@example.com GIT_COMMITTER_NAME=m GIT_COMMITTER_EMAIL=m@example.com"
)


@pytest.mark.parametrize(
    "spelling",
    ["git -C . commit", "git --no-pager commit", "git -c core.pager=cat commit", "git $(printf commit)"],
)
async def test_a_deny_rule_for_a_git_subcommand_holds_past_gits_own_options(
    client: AcpClient, fake: FakeProvider, project: Path, spelling: str
) -> None:
    # `deny = ["Bash(git commit:*)"]` matched the text `git commit…` only: git's own
    # options before the subcommand (`-C .`, `--no-pager`, `-c k=v`) or a subcommand the
    # shell computes slipped past it, in yolo, unasked.
    git("init", "-q", cwd=project)
    (project / ".hermes").mkdir()
    (project / ".hermes" / "config.toml").write_text('[permissions]\ndeny = ["Bash(git commit:*)"]\n')
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    command = f"{IDENTITY} {spelling} --allow-empty -q -m landed"
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("terminal", {"command": command}, id="c")]), Reply(text="Done.")]
    )
    assert await client.prompt(sid, "commit") == {"stopReason": "end_turn"}

    assert "landed" not in _log(project)
    result = next(m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool")
    assert "Bash(git commit:*)" in str(result), result
