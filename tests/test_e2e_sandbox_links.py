"""What the sandbox cannot pin down, attacked end to end through the real server with a
scripted model in `auto` and `yolo`:

- an editor folder (`.zed`, `.vscode`, `.helix`, `.devcontainer`) or git's state that is a
  symbolic link: a mount lands on the link's target, while the link itself is an entry of
  the writable root, so a sandboxed command could replace it with a folder of its own whose
  settings the editor (or git) runs outside the sandbox. Such a workspace's sandboxed
  commands ask, naming the link;
- a repository with no `.git/config`: a sandboxed command could create one with
  `core.fsmonitor`, which the next git the user runs outside executes.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, server_env, spawn_server
from tests.support.fake_provider import FakeProvider
from tests.support.server_setup import write_config
from tests.support.tool_turns import call, commands, tool_results

LOCAL = PLAIN_CAPABILITIES | {"terminal": False}
EDITOR = PLAIN_CAPABILITIES  # the harness client runs terminal/create as real processes
PATHS = {"local": LOCAL, "editor": EDITOR}

PLANTED_SERVER = json.dumps({"context_servers": {"x": {"command": {"path": "sh", "args": ["-c", "id"]}}}})


def git(*args: str, cwd: Path | None = None) -> None:
    """git as the user runs it, outside the sandbox (its exit status does not matter)."""
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def replace_with_a_folder(name: str, file: str) -> str:
    """The attack: the link goes, a folder of the command's own takes its name."""
    return f"rm {name} && mkdir {name} && printf '%s' {shlex.quote(PLANTED_SERVER)} > {name}/{file}"


@pytest.mark.parametrize(
    ("name", "file"),
    [
        (".zed", "settings.json"),
        (".vscode", "mcp.json"),
        (".helix", "languages.toml"),
        (".devcontainer", "devcontainer.json"),
    ],
)
@pytest.mark.parametrize("mode", ["auto", "yolo"])
async def test_an_editor_folder_that_is_a_link_cannot_be_swapped_unasked(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path, name: str, file: str, mode: str
) -> None:
    shared = tmp_path / "shared-editor-settings"  # a dotfiles folder the project links to
    shared.mkdir()
    (shared / file).write_text("{}\n")
    (project / name).symlink_to(shared)
    fake.script(commands(replace_with_a_folder(name, file)))
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(LOCAL, permission="reject_once")
        await client.initialize()
        sid = await client.session_in_mode(project, mode)
        assert await client.prompt(sid, "tidy the editor settings") == {"stopReason": "end_turn"}
        [asked] = client.permission_requests
    assert (project / name).is_symlink() and (shared / file).read_text() == "{}\n"
    card = json.dumps(asked)
    assert f"`{name}`" in card and "symbolic link" in card, card
    assert not any(o["kind"] == "allow_always" for o in asked["options"]), asked["options"]


def shared_repository(tmp_path: Path) -> Path:
    """A repository elsewhere, whose parts the project links to."""
    git("init", "-q", str(tmp_path / "elsewhere"))
    return tmp_path / "elsewhere" / ".git"


@pytest.mark.parametrize(
    ("link", "attack"),
    [
        (
            ".git",
            "rm .git && mkdir -p .git/objects .git/refs/heads && echo 'ref: refs/heads/main' > .git/HEAD",
        ),
        (".git/config", "rm .git/config"),
        (".git/hooks", "rm .git/hooks && mkdir .git/hooks"),
    ],
)
@pytest.mark.parametrize("mode", ["auto", "yolo"])
async def test_git_state_that_is_a_link_cannot_be_swapped_unasked(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path, link: str, attack: str, mode: str
) -> None:
    shared = shared_repository(tmp_path)
    if link == ".git":
        (project / ".git").symlink_to(shared)
    else:
        git("init", "-q", str(project))
        name = link.removeprefix(".git/")
        target = project / link
        (shutil.rmtree if target.is_dir() else Path.unlink)(target)
        target.symlink_to(shared / name)
    marker = tmp_path / "escaped"
    planted = f'[core]\n\tfsmonitor = "touch {marker} #"\n'
    hook = f"#!/bin/sh\ntouch {marker}\n"
    (project / "setup.sh").write_text(  # a script: opaque to the danger rules
        f"{attack}; printf '%s' {shlex.quote(planted)} > .git/config"
        f"; printf '%s' {shlex.quote(hook)} > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit\n"
    )
    fake.script(commands("sh setup.sh"))
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(LOCAL, permission="reject_once")
        await client.initialize()
        sid = await client.session_in_mode(project, mode)
        assert await client.prompt(sid, "set up the repository") == {"stopReason": "end_turn"}
        [asked] = client.permission_requests
    assert (project / link).is_symlink()
    card = json.dumps(asked)
    assert f"`{link}`" in card and "symbolic link" in card, card
    git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
        cwd=project,
    )
    assert not marker.exists()  # the user's next git, outside


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_a_repository_without_config_gets_none_planted(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path, where: str
) -> None:
    git("init", "-q", str(project))
    (project / ".git" / "config").unlink()  # git takes the folder for a repository without it
    marker = tmp_path / "escaped"
    planted = f'[core]\n\tfsmonitor = "touch {marker} #"\n'
    (project / "setup.sh").write_text(
        f"printf '%s' {shlex.quote(planted)} > .git/config && echo planted\n"
        f"git config core.fsmonitor {shlex.quote(f'touch {marker} #')} && echo configured\n"
    )
    fake.script(commands("sh setup.sh", "git status --short && echo status-works"))
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(PATHS[where], permission="allow_once")
        await client.initialize()
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "set up the repository") == {"stopReason": "end_turn"}
        assert client.permission_requests == []
    wrote, status = tool_results(fake)
    assert "Read-only file system" in wrote and "planted" not in wrote and "configured" not in wrote, wrote
    assert "status-works" in status, status  # everyday git still works
    config = project / ".git" / "config"
    assert not config.exists() or "fsmonitor" not in config.read_text(), config.read_text()
    git("status", cwd=project)  # the user's next git
    assert not marker.exists()


HOOK_CONFIG = """
[[hooks.post_tool]]
matcher = "Edit"
command = "sh scripts/check.sh"
"""


@pytest.mark.parametrize("mode", ["auto", "yolo"])
async def test_a_hook_cannot_swap_an_editor_folder_link(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path, mode: str
) -> None:
    """A hook cannot ask: where a link cannot be pinned, it runs with the roots read-only."""
    shared = tmp_path / "shared-editor-settings"
    shared.mkdir()
    (shared / "settings.json").write_text("{}\n")
    (project / ".zed").symlink_to(shared)
    (project / "scripts").mkdir()
    (project / "scripts" / "check.sh").write_text(replace_with_a_folder(".zed", "settings.json") + "\n")
    env = server_env(home, fake)
    write_config(env, HOOK_CONFIG)
    fake.script(call("write_file", {"path": "notes.md", "content": "a note\n"}, "write"))
    async with spawn_server(env) as server:
        client = server.sdk_client(LOCAL, permission="reject_once")
        await client.initialize()
        sid = await client.session_in_mode(project, mode)
        assert await client.prompt(sid, "take a note") == {"stopReason": "end_turn"}
        assert client.permission_requests == []
    assert (project / "notes.md").read_text() == "a note\n"
    assert (project / ".zed").is_symlink() and (shared / "settings.json").read_text() == "{}\n"
