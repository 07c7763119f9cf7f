"""An attacker's way out of the sandbox through the agent's own processes: the workspace's
`.git/config` names a command (`core.fsmonitor`) that git runs whenever it looks at the
work tree. The agent must never run git (or anything) on its own over that config, however
the config got there: the model's write_file, a sandboxed command, `git init`, and
whichever way the agent looks next: a new directory in the turn, a later session in plan
mode with a text-only turn, `session/load` alone.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, ServerProcess, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.watching import until_watched, watcher_caught_up

LOCAL = PLAIN_CAPABILITIES | {"terminal": False, "fs": {}}  # the server's own disk and processes


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Outside the workspace: the planted command's proof that it ran."""
    return tmp_path / "escaped"


def fsmonitor_config(marker: Path) -> str:
    # git appends its own arguments to the hook command: `#` makes them a comment.
    return f'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {marker} #"\n'


def git_init(project: Path) -> None:
    """A repository as `git init` leaves it, written by hand: the test runs no git either."""
    for name in ("objects", "refs/heads", "info"):
        (project / ".git" / name).mkdir(parents=True, exist_ok=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / ".gitignore").write_text("*.log\n")


@asynccontextmanager
async def serving(home: Path, fake: FakeProvider) -> AsyncIterator[tuple[ServerProcess, AcpClient]]:
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(LOCAL, permission="allow_once")
        await client.initialize()
        yield server, client


def tool_turn(*calls: ToolCallSpec) -> list[Reply]:
    return [Reply(tool_calls=list(calls)), Reply(text="Done.")]


async def test_a_git_config_written_by_write_file_runs_nothing_when_a_directory_appears(
    fake: FakeProvider, home: Path, project: Path, marker: Path
) -> None:
    git_init(project)
    fake.script(
        tool_turn(
            ToolCallSpec(
                "write_file", {"path": ".git/config", "content": fsmonitor_config(marker)}, id="cfg"
            ),
            ToolCallSpec("write_file", {"path": "newdir/notes.txt", "content": "hi\n"}, id="new"),
        )
    )
    async with serving(home, fake) as (server, client):
        sid = await client.session_in_mode(project, "accept_edits")
        assert await client.prompt(sid, "set up the repository") == {"stopReason": "end_turn"}
        assert "fsmonitor" in (project / ".git" / "config").read_text()  # the write happened
        await until_watched(server.pid, project / "newdir")
        await watcher_caught_up(server.pid, project)  # new directories: the watcher looked at them
        assert not marker.exists()


@pytest.mark.parametrize("mode", ["auto", "yolo"])
async def test_a_git_config_planted_by_a_sandboxed_command_runs_nothing(
    fake: FakeProvider, home: Path, project: Path, marker: Path, mode: str
) -> None:
    git_init(project)
    (project / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n")
    (project / "setup.sh").write_text(
        f"printf '%s' {shlex.quote(fsmonitor_config(marker))} > .git/config 2>/dev/null"
        f" || git config core.fsmonitor {shlex.quote(f'touch {marker} #')}\nmkdir -p generated/more\n"
    )
    fake.script(tool_turn(ToolCallSpec("terminal", {"command": "sh setup.sh"}, id="setup")))
    async with serving(home, fake) as (server, client):
        sid = await client.session_in_mode(project, mode)
        assert await client.prompt(sid, "run the setup script") == {"stopReason": "end_turn"}
        await watcher_caught_up(server.pid, project)
        assert not marker.exists()


async def planted_repository(project: Path, marker: Path) -> None:
    git_init(project)
    (project / ".git" / "config").write_text(fsmonitor_config(marker))


async def test_a_later_session_in_plan_mode_with_a_text_only_turn_runs_nothing(
    fake: FakeProvider, home: Path, project: Path, marker: Path
) -> None:
    await planted_repository(project, marker)
    fake.script([Reply(text="Here is the plan.")])
    async with serving(home, fake) as (server, client):
        sid = await client.session_in_mode(project, "plan")
        assert await client.prompt(sid, "make a plan") == {"stopReason": "end_turn"}
        await watcher_caught_up(server.pid, project)
    assert not marker.exists()


async def test_session_load_alone_runs_nothing(
    fake: FakeProvider, home: Path, project: Path, marker: Path
) -> None:
    git_init(project)
    fake.script([Reply(text="Hello.")])
    async with serving(home, fake) as (_, client):
        sid = await client.session_in_mode(project, "ask")
        await client.prompt(sid, "hello")
    (project / ".git" / "config").write_text(fsmonitor_config(marker))  # planted between sessions
    async with serving(home, fake) as (server, client):
        await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        await until_watched(server.pid, project)  # the loaded session's watcher starts after the response
        await watcher_caught_up(server.pid, project)
    assert not marker.exists()


async def test_git_init_by_a_sandboxed_command_plants_nothing_for_the_next_session(
    fake: FakeProvider, home: Path, project: Path, marker: Path
) -> None:
    plant = f"git init -q . && git config core.fsmonitor {shlex.quote(f'touch {marker} #')}"
    fake.script([*tool_turn(ToolCallSpec("terminal", {"command": plant}, id="init")), Reply(text="Hi.")])
    async with serving(home, fake) as (server, client):
        first = await client.session_in_mode(project, "ask")  # the user approves the command once
        assert await client.prompt(first, "make it a repository") == {"stopReason": "end_turn"}
        # The sandbox refuses a `git init` where no repository is (an empty read-only `.git`
        # stands there): the plant fails inside it. Either way the next session must not run it.
        second = await client.session_in_mode(project, "ask")
        assert await client.prompt(second, "hello again") == {"stopReason": "end_turn"}
        await watcher_caught_up(server.pid, project)
    assert not marker.exists()
