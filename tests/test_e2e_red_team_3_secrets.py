"""The third attack round: secrets that reached commands or the model (credentials in git
config files, the agent's model keys in an unconfined command), and attacks that held
(rewind through a swapped link, editor-fs writes to what runs outside, an output flood).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import LOCAL, User, git, sandboxed, turn, unconfined


async def test_rewind_does_not_write_or_delete_through_a_folder_swapped_for_a_link_out(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    # Held on main (files are opened beneath the directory): the model edits conf/app.txt
    # and creates conf/new.txt, then a sandboxed command swaps `conf` for a link to a
    # folder outside holding a `new.txt` of the user's. Rewinding the edit must neither
    # write app.txt there nor delete the user's new.txt.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "new.txt").write_text("the user's\n")
    (project / "conf").mkdir()
    (project / "conf" / "app.txt").write_text("one\n")
    edit = {"path": "conf/app.txt", "old_text": "one", "new_text": "two"}
    fake.script(
        [
            *turn(
                ToolCallSpec("patch", edit, id="edit"),
                ToolCallSpec("write_file", {"path": "conf/new.txt", "content": "made\n"}, id="new"),
            ),
            *turn(sandboxed(f"mv conf conf.old && ln -s {outside} conf", "swap")),
        ]
    )
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        for i in range(2):
            assert await client.prompt(sid, f"step {i}") == {"stopReason": "end_turn"}
        assert (project / "conf").is_symlink()
        outcome = await client.request(
            "_hermes/rewind", {"sessionId": sid, "prompt": 1, "restore": "files", "force": True}
        )
    assert sorted(p.name for p in outside.iterdir()) == ["new.txt"], outcome
    assert (outside / "new.txt").read_text() == "the user's\n", outcome


EDITOR_FS = PLAIN_CAPABILITIES | {"terminal": False}  # the editor reads and writes the files


@pytest.mark.parametrize(
    "path", [".git/config", ".vscode/settings.json", "linked-config", ".git/hooks/pre-commit"]
)
async def test_a_write_through_the_editors_fs_to_what_runs_outside_asks_in_yolo(
    fake: FakeProvider, home: Path, project: Path, path: str
) -> None:
    # Held on main: the protected paths are decided before the write, whoever performs it.
    git("init", "-q", cwd=project)
    (project / "linked-config").symlink_to(project / ".git" / "config")
    before = (project / ".git" / "config").read_text()
    content = '[core]\n\tfsmonitor = "touch /tmp/escaped #"\n'
    fake.script(turn(ToolCallSpec("write_file", {"path": path, "content": content}, id="w")))
    user = User(first="reject_once")
    async with connected(server_env(home, fake), EDITOR_FS, permission=user) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        assert await client.prompt(sid, "configure it") == {"stopReason": "end_turn"}
    assert user.asked_for() == ["w"]
    assert (project / ".git" / "config").read_text() == before
    assert not (project / path).exists() or "fsmonitor" not in (project / path).read_text()


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


async def test_a_flood_of_output_neither_grows_the_server_nor_stops_it(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # Held on main: 100 MB of output in one line-less stream; the model gets the tail.
    from tests.support.acp_harness import spawn_server

    fake.script(
        [
            *turn(sandboxed("head -c 100000000 /dev/zero | tr '\\0' a; echo; echo the-end", "flood")),
            Reply(text="Still here."),
        ]
    )
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(LOCAL, permission="allow_once")
        await client.initialize()
        sid = await client.session_in_mode(project, "auto")
        before = peak_kb(server.pid)
        assert await client.prompt(sid, "build it") == {"stopReason": "end_turn"}
        grown_mb = (peak_kb(server.pid) - before) // 1024
        assert await client.prompt(sid, "are you there?") == {"stopReason": "end_turn"}
    results = [
        m["content"] for m in fake.requests[-2].body["messages"] if m["role"] == "tool"
    ]  # after the flood
    assert "the-end" in results[-1] and len(results[-1]) < 70_000, len(results[-1])
    assert grown_mb < 150, f"the flood took {grown_mb} MB more"


GIT_TOKEN = "ghp_remoteurltoken0123456789"
HEADER_TOKEN = "eC1hY2Nlc3MtdG9rZW46Y2ktc2VjcmV0"
GLOBAL_TOKEN = "glpat-insteadoftoken987"


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_git_credentials_in_config_files_do_not_reach_a_sandboxed_command(
    fake: FakeProvider, home: Path, project: Path, where: str
) -> None:
    # A token in a remote URL, CI's persisted `extraheader`, and one in the user's
    # ~/.gitconfig `insteadOf`: git must read these files, so they are not hidden like
    # ~/.git-credentials, and `cat` or `git remote -v` handed the tokens to the model.
    git("init", "-q", cwd=project)
    git("remote", "add", "origin", f"https://x-access-token:{GIT_TOKEN}@github.com/o/r.git", cwd=project)
    git("config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {HEADER_TOKEN}", cwd=project)
    (home / ".gitconfig").write_text(
        f'[url "https://oauth2:{GLOBAL_TOKEN}@gitlab.com/"]\n\tinsteadOf = https://gitlab.com/\n'
    )
    probe = (
        "cat .git/config ~/.gitconfig; git remote -v; git config --list; git status --short && echo git-works"
    )
    fake.script(turn(sandboxed(probe, "probe")))
    capabilities = LOCAL if where == "local" else PLAIN_CAPABILITIES  # the editor's terminal
    async with connected(server_env(home, fake), capabilities) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "where does this repository push?") == {"stopReason": "end_turn"}
    [result] = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "git-works" in result and "github.com/o/r.git" in result, result
    assert [t for t in (GIT_TOKEN, HEADER_TOKEN, GLOBAL_TOKEN) if t in result] == [], result
    assert GIT_TOKEN in (project / ".git" / "config").read_text()  # the user's file is as it was


async def test_git_credentials_do_not_reach_the_model_through_read_file_or_search(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    git("init", "-q", cwd=project)
    git("remote", "add", "origin", f"https://x-access-token:{GIT_TOKEN}@github.com/o/r.git", cwd=project)
    (project / "cfg").symlink_to(".git/config")
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCallSpec("read_file", {"path": ".git/config"}, id="read"),
                    ToolCallSpec("read_file", {"path": "cfg"}, id="linked"),
                    ToolCallSpec("search", {"pattern": "url", "path": ".git/config"}, id="search"),
                ]
            ),
            Reply(text="Done."),
        ]
    )
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "where does this repository push?") == {"stopReason": "end_turn"}
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and all("github.com/o/r.git" in r for r in results), results
    assert [r for r in results if GIT_TOKEN in r] == [], results


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_a_command_run_outside_the_sandbox_does_not_get_the_agents_model_keys(
    fake: FakeProvider, home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # The user approves `npm test` outside the sandbox (it needs a socket); what runs is
    # whatever package.json says by then, and the agent's keys were in its environment.
    # Hooks and MCP servers already went without them.
    keys = {"OPENAI_API_KEY": "sk-agent-only-77a1", "ANTHROPIC_API_KEY": "sk-ant-agent-only-77a2"}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)  # the editor's environment too, which its terminals get
    fake.script(turn(unconfined("env; echo listed", "env")))
    capabilities = LOCAL if where == "local" else PLAIN_CAPABILITIES
    user = User(first="allow_once")
    async with connected(server_env(home, fake, **keys), capabilities, permission=user) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "show the environment") == {"stopReason": "end_turn"}
    [result] = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert user.asked_for() == ["env"] and "listed" in result and "PATH=" in result, result
    assert [k for k, v in keys.items() if v in result] == [], result
