"""Which toolchain caches a sandboxed command may write, end to end through the real server
with a scripted model: a line of utilities writes none (it sees them, the sandbox's own
layer included, read-only), a known build program writes only its own, and a script of the
workspace's (or a program found in it) writes them all; the user's caches stay byte for
byte in every case."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.tool_turns import tool_results

LOCAL = PLAIN_CAPABILITIES | {"terminal": False}
GIT_ID = "-c user.name=t -c user.email=t@example.com"

# A stand-in for npm: appends its first argument to a log in its cache and prints the log,
# then tries to write cargo's cache, which is not its own.
FAKE_NPM = """#!/bin/sh
mkdir -p ~/.npm/_cacache
echo "$1" >> ~/.npm/_cacache/log
cat ~/.npm/_cacache/log
if echo planted > ~/.cargo/registry/planted 2>/dev/null
then echo cargo-writable
else echo cargo-read-only
fi
"""


def one_at_a_time(*lines: str) -> list[Reply]:
    """One `terminal` call per reply, so the commands run one after the other."""
    calls = [
        Reply(tool_calls=[ToolCallSpec("terminal", {"command": line}, id=f"call_{i}")])
        for i, line in enumerate(lines)
    ]
    return [*calls, Reply(text="Done.")]


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


def with_caches(home: Path) -> dict[str, dict[str, str]]:
    for cache in (".npm/_cacache", ".cargo/registry", ".cache/pip"):
        (home / cache).mkdir(parents=True, exist_ok=True)
    (home / ".npm/_cacache/index").write_text("the user's own\n")
    return users_caches(home)


def users_caches(home: Path) -> dict[str, dict[str, str]]:
    return {name: snapshot(home / name) for name in (".npm", ".cargo", ".cache")}


async def run_turn(
    fake: FakeProvider, home: Path, project: Path, *lines: str, path: str | None = None, asked: int = 0
) -> list[str]:
    fake.script(one_at_a_time(*lines))
    env = server_env(home, fake, **({"PATH": path} if path else {}))
    async with spawn_server(env) as server:
        client = server.sdk_client(LOCAL, permission="allow_once")
        await client.initialize()
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "build it") == {"stopReason": "end_turn"}
        assert len(client.permission_requests) == asked  # auto: a sandboxed build asks nothing
    return tool_results(fake)


async def test_a_line_of_utilities_sees_the_caches_read_only_with_the_sandboxs_own_layer(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    before = with_caches(home)
    (project / "fill.sh").write_text(
        "mkdir -p ~/.npm/_cacache && echo from-the-build > ~/.npm/_cacache/entry\n"
    )
    entry = "~/.npm/_cacache/entry"
    results = await run_turn(
        fake,
        home,
        project,
        "sh fill.sh && echo filled",
        f"cat {entry} && echo tampered > {entry}",
        f"sh -c 'cat {entry}' && cat ~/.npm/_cacache/index",
        asked=1,  # the danger rules ask before a write to the home folder (answered: once)
    )
    filled, utility, after = results
    assert "filled" in filled, filled
    # The utility reads what the build left in the sandbox's layer, and cannot change it.
    assert "from-the-build" in utility and "Read-only file system" in utility, utility
    assert "Exit code: 1" in utility and "toolchain cache" in utility, utility  # the model hears why
    assert "from-the-build" in after and "tampered" not in after and "the user's own" in after, after
    assert users_caches(home) == before  # the user's caches: byte for byte


async def test_a_known_build_program_writes_its_own_cache_and_keeps_it_but_no_other(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    before = with_caches(home)
    tools = home / "tools"  # outside the workspace, as an installed npm is (/tmp is emptied)
    tools.mkdir()
    (tools / "npm").write_text(FAKE_NPM)
    (tools / "npm").chmod(0o755)
    results = await run_turn(
        fake, home, project, "npm install", "npm ci", path=f"{tools}{os.pathsep}{os.environ['PATH']}"
    )
    first, second = results
    assert "install" in first and "cargo-read-only" in first, first
    assert "install\nci" in second and "cargo-read-only" in second, second  # its cache, kept
    assert users_caches(home) == before


async def test_a_program_found_in_the_workspace_gets_every_cache(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    before = with_caches(home)
    tools = project / "node_modules" / ".bin"  # the workspace's own code, whatever its name
    tools.mkdir(parents=True)
    (tools / "npm").write_text(FAKE_NPM)
    (tools / "npm").chmod(0o755)
    [result] = await run_turn(
        fake, home, project, "npm install", path=f"{tools}{os.pathsep}{os.environ['PATH']}"
    )
    assert "install" in result and "cargo-writable" in result, result
    assert users_caches(home) == before  # written to the sandbox's own layer only


PRE_COMMIT_HOOK = """#!/bin/sh
# what pre-commit's hook does: set up its environments in its cache, then run them
mkdir -p ~/.cache/pre-commit && date >> ~/.cache/pre-commit/runs && echo hook-ran
"""


@pytest.fixture
def hooked_repo(project: Path) -> Path:
    """A repository whose pre-commit hook the user installed (outside the sandbox)."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text(PRE_COMMIT_HOOK)
    hook.chmod(0o755)
    (project / "a.txt").write_text("1\n")
    return project


async def test_a_commit_whose_hook_writes_a_cache_still_works(
    fake: FakeProvider, home: Path, hooked_repo: Path
) -> None:
    before = with_caches(home)
    line = f"git add a.txt && git {GIT_ID} commit -qm one && git log --oneline"
    [result] = await run_turn(fake, home, hooked_repo, line)
    assert "hook-ran" in result and "one" in result, result
    assert users_caches(home) == before


# Waits (inside its sandbox) until the next command has started, then writes npm's cache.
WRITE_AFTER_THE_NEXT_START = """while [ ! -e started ]; do sleep 0.02; done
if echo from-the-first >> ~/.npm/_cacache/index
then echo first-wrote > first
else echo first-refused > first
fi
"""


def script_two_builds_at_once(fake: FakeProvider, project: Path) -> None:
    """A background script that writes its cache after a second script started, and a third
    that shows what the first wrote."""
    (project / "first.sh").write_text(WRITE_AFTER_THE_NEXT_START)
    (project / "second.sh").write_text("touch started\n")  # a script: every cache's overlay too
    (project / "third.sh").write_text(
        "while [ ! -e first ]; do sleep 0.02; done; cat first ~/.npm/_cacache/index\n"
    )
    background = {"command": "sh first.sh", "background": True}
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("terminal", background, id="call_first")]),
            *one_at_a_time("sh second.sh", "sh third.sh"),
        ]
    )


async def test_a_command_still_writes_its_cache_after_another_one_started(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    """Two scripts at once, both with every cache's overlay: the second one's mount must not
    take the first one's work dir away (its next write to the cache failed with EPERM)."""
    before = with_caches(home)
    script_two_builds_at_once(fake, project)
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(LOCAL, permission="allow_once")
        await client.initialize()
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "build it") == {"stopReason": "end_turn"}
        assert client.permission_requests == []
    seen = tool_results(fake)[-1]
    assert "first-wrote" in seen, seen
    assert "the user's own\nfrom-the-first" in seen, seen  # kept in the sandbox's layer
    assert users_caches(home) == before
    left = [p for works in home.rglob("works") for p in works.iterdir()]
    assert left == []  # each command's work dirs removed, and the spares at the end


async def test_an_editor_terminals_command_still_writes_its_cache_after_another_one_started(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    """The same two scripts at once in the editor's terminals: each launch has a work dir of
    its own there too (they shared the layer's: the first one's write failed with EPERM)."""
    before = with_caches(home)
    script_two_builds_at_once(fake, project)
    async with spawn_server(server_env(home, fake)) as server:
        client = server.sdk_client(PLAIN_CAPABILITIES, permission="allow_once")
        await client.initialize()
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "build it") == {"stopReason": "end_turn"}
        assert client.permission_requests == []
        assert client.methods_called().count("terminal/create") == 3  # the editor ran them
    seen = tool_results(fake)[-1]
    assert "first-wrote" in seen, seen
    assert "the user's own\nfrom-the-first" in seen, seen
    assert users_caches(home) == before
    left = [p for works in home.rglob("works") for p in works.iterdir()]
    assert left == []  # given back as the editor reported each command's end
