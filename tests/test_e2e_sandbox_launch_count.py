"""The sandbox's count of a session's running launches, end to end through the real server
with a scripted model, in a project without `.git`.

While a command runs, the sandbox keeps an empty mount point for the missing `.git` (bwrap
leaves it on the host), its cache overlays' work dirs and a watch on what it may plant;
once none runs, they go. A launch the editor refused (`terminal/create` answered with an
error) was counted and never uncounted: from then on the session looked busy forever, the
empty `.git` stayed in the user's project after every command, and the watch taken at that
launch outlived it, so a `.mcp.json` the user wrote between two turns would be moved aside
after the next command as if a command had planted it. A command started beside a running
one took that one's empty mount point for a repository: `.git` was writable to it (a
sandboxed `git init` wrote there), and what was made in it stayed after the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.tool_turns import tool_results

pytestmark = pytest.mark.asyncio(loop_scope="module")

LOCAL = PLAIN_CAPABILITIES | {"terminal": False}
USERS_OWN = '{"mcpServers": {}}\n'


def one_after_the_other(*lines: str) -> list[Reply]:
    calls = [
        Reply(tool_calls=[ToolCallSpec("terminal", {"command": line}, id=f"call_{i}")])
        for i, line in enumerate(lines)
    ]
    return [*calls, Reply(text="Done.")]


def refuse_first_create(client: AcpClient) -> None:
    """The editor answers the session's first `terminal/create` with an error."""
    run = client._terminal
    refused: list[str] = []

    async def terminal(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "terminal/create" and not refused:
            refused.append(method)
            raise RequestError(-32603, "the editor could not open a terminal")
        return await run(method, params)

    client._terminal = terminal  # type: ignore[method-assign]


async def test_a_terminal_the_editor_refused_leaves_no_mount_point_and_moves_no_users_file(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    async with connected(server_env(home, fake), PLAIN_CAPABILITIES) as (_, client):
        refuse_first_create(client)
        sid = await client.session_in_mode(project, "auto")
        fake.script(one_after_the_other("echo first", "echo second"))
        assert await client.prompt(sid, "run them") == {"stopReason": "end_turn"}
        first, second = tool_results(fake)
        assert "could not" in first and "second" in second
        # No command of the session runs now: bwrap's mount point for the missing `.git` is gone.
        assert not (project / ".git").exists()
        (project / ".mcp.json").write_text(USERS_OWN)  # the user's own, between two turns
        fake.script(one_after_the_other("echo third"))
        assert await client.prompt(sid, "once more") == {"stopReason": "end_turn"}
        assert "third" in tool_results(fake)[-1]
        assert not (project / ".git").exists()
        assert client.violations == []
    assert (project / ".mcp.json").read_text() == USERS_OWN
    assert [p.name for p in project.iterdir()] == [".mcp.json"]


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor"])
async def test_a_command_beside_a_running_one_leaves_no_git_folder_in_a_project_without_one(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    """The launch beside the running one found that one's empty mount point for the
    missing `.git` and took it for a repository: `.git` was writable to its command, whose
    `git init` wrote `HEAD` and `refs` there, and the launch made a `config` and hook
    folders in it; the user's project was left with a `.git` no clean-up could remove."""
    waits = {"command": "touch mounted && exec sleep infinity", "background": True}  # runs until killed
    until_mounted = "until [ -e mounted ]; do sleep 0.01; done"
    beside = {"command": "echo beside; git init -q --template= ; ls -A .git"}
    kill = {"handle": "proc-1", "action": "kill"}
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("terminal", waits, id="call_waits")]),
            Reply(tool_calls=[ToolCallSpec("terminal", {"command": until_mounted}, id="call_until")]),
            Reply(tool_calls=[ToolCallSpec("terminal", beside, id="call_beside")]),
            Reply(tool_calls=[ToolCallSpec("process", kill, id="call_kill")]),
            Reply(text="Done."),
        ]
    )
    async with connected(server_env(home, fake), capabilities) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "run them") == {"stopReason": "end_turn"}
        results = tool_results(fake)
        assert "beside" in results[2] and "Killed proc-1" in results[3], results
        assert ".git/refs: Read-only file system" in results[2], results[2]
        assert not (project / ".git").exists()  # the editors' folders stay until the session ends
        assert client.violations == []


async def test_a_command_of_another_session_in_the_same_project_gets_a_read_only_git_too(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    """Two sessions (two threads of one editor) in one project without `.git`: the second
    session's first command found the first session's empty mount point and took it for a
    repository, so its `git init` wrote there and the project kept a `.git`. And the mount
    point stays while the first session's command runs: removed, its mount would go."""
    waits = {"command": "touch mounted && exec sleep infinity", "background": True}
    git_init = {"command": "git init -q --template= ; ls -A .git"}
    kill = {"handle": "proc-1", "action": "kill"}
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        first = await client.session_in_mode(project, "auto")
        second = await client.session_in_mode(project, "auto")
        fake.script(
            [Reply(tool_calls=[ToolCallSpec("terminal", waits, id="call_waits")]), Reply(text="Started.")]
        )
        assert await client.prompt(first, "start it") == {"stopReason": "end_turn"}
        until = {"command": "until [ -e mounted ]; do sleep 0.01; done"}
        fake.script(one_after_the_other(until["command"], git_init["command"]))
        assert await client.prompt(second, "init") == {"stopReason": "end_turn"}
        result = tool_results(fake)[-1]
        assert ".git/refs: Read-only file system" in result, result
        # The second session's commands ended; the first one's still has it mounted.
        assert (project / ".git").is_dir()
        fake.script(
            [Reply(tool_calls=[ToolCallSpec("process", kill, id="call_kill")]), Reply(text="Stopped.")]
        )
        assert await client.prompt(first, "stop it") == {"stopReason": "end_turn"}
        assert "Killed proc-1" in tool_results(fake)[-1]
        assert not (project / ".git").exists()
        assert client.violations == []


async def test_an_empty_git_folder_left_behind_is_no_repository_to_write_in(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    """An empty `.git` that is no mount point of this process (an agent killed mid-command
    left its own, or another agent process's command has it mounted) was taken for a
    repository: bound writable, a sandboxed `git init` wrote there. It is kept read-only,
    and left as it was."""
    (project / ".git").mkdir()
    fake.script(one_after_the_other("git init -q --template= ; ls -A .git"))
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "init") == {"stopReason": "end_turn"}
        result = tool_results(fake)[-1]
        assert ".git/refs: Read-only file system" in result, result
        assert client.violations == []
    assert list((project / ".git").iterdir()) == []
