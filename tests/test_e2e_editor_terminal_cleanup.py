"""An editor terminal's sandboxed command ends like a local one: the sandbox's clean-up runs
when the editor says it exited (a planted `.git/commondir` moved aside before the user's
next git, bwrap's empty mount point for a missing `.git` removed), end to end through the
real server with the harness client running `terminal/create` as real processes."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


def command(line: str) -> list[Reply]:
    return [Reply(tool_calls=[ToolCallSpec("terminal", {"command": line}, id="call_0")]), Reply(text="Done.")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


async def test_a_commondir_planted_from_an_editor_terminal_is_moved_aside_when_it_exits(
    fake: FakeProvider, tmp_path: Path, repo: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    fake.forget()
    fake.script(
        command(
            "git init -q --bare innocent "
            f"&& git config -f innocent/config core.fsmonitor 'touch {tmp_path}/pwned' "
            f"&& echo {repo / 'innocent'} > .git/commondir && echo planted"
        )
    )
    async with connected(server_env(home, fake), PLAIN_CAPABILITIES) as (_, client):
        session = (await client.new_session(repo))["sessionId"]
        await client.request("session/set_mode", {"sessionId": session, "modeId": "auto"})
        assert await client.prompt(session, "set up") == {"stopReason": "end_turn"}
        assert "terminal/create" in client.methods_called()
        # Before any later command of the session: the user's own git runs now.
        assert not (repo / ".git" / "commondir").exists()
    status = ["git", "-C", str(repo), "status", "--short"]
    await asyncio.to_thread(subprocess.run, status, check=True, capture_output=True)
    assert not (tmp_path / "pwned").exists()


async def test_the_empty_git_mount_point_goes_when_an_editor_terminal_exits(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    fake.forget()
    fake.script(command("echo hi"))
    async with connected(server_env(home, fake), PLAIN_CAPABILITIES) as (_, client):
        session = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": session, "modeId": "auto"})
        assert await client.prompt(session, "say hi") == {"stopReason": "end_turn"}
        assert not (project / ".git").exists()  # while the session is still open
