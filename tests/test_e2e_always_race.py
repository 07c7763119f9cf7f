"""An "always" outside the sandbox is checked, then the command runs: a sandboxed command
still running in between could change what it names or runs (issue 19).

The window is made deterministic with no hook in the server: the workspace holds a FIFO,
the approved command opens it first, and a sandboxed background job, blocked opening the
FIFO's other end, is let through by exactly that open. It swaps the checked name, then
closes the FIFO, so the command goes on only after the swap.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import LOCAL, User, run_turns, sandboxed, turn, unconfined

KEY = "PRIVATE-KEY-always-race-0123456789"
CHANGED = "CHANGED-SCRIPT-RAN-42"  # what the rewritten script prints (its text says $((40+2)))


def background(command: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec("terminal", {"command": command, "background": True}, id=call_id)


def everything_sent(fake: FakeProvider) -> str:
    return "\n".join(json.dumps(request.body) for request in fake.requests)


def swapper(swap: str) -> str:
    # Blocks opening the FIFO until the approved command opens it, swaps, and only then
    # lets the command read the FIFO's end.
    return f"exec 3>ready.fifo; {swap}; exec 3>&-"


def the_link(home: Path) -> str:
    return f"ln -sf {home}/.ssh/id_ed25519 notes.md"


def the_rewrite(home: Path) -> str:
    return f"printf 'echo CHANGED-SCRIPT-RAN-$((40+2)); cat {home}/.ssh/id_ed25519\\n' > lib.sh"


@pytest.mark.parametrize(
    ("first", "later", "swap"),
    [
        # A plain file when checked, a link to the key when cat opens it.
        ("cat README.md", "cat ready.fifo notes.md", the_link),
        # The script's content was bound by the "always"; the part it sources is rewritten.
        ("sh run.sh", "sh run.sh", the_rewrite),
    ],
    ids=["name-swapped", "script-rewritten"],
)
async def test_a_sandboxed_job_cannot_change_what_an_always_runs_after_the_check(
    fake: FakeProvider, home: Path, project: Path, first: str, later: str, swap: object
) -> None:
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text(f"{KEY}\n")
    (project / "README.md").write_text("readme\n")
    (project / "notes.md").write_text("notes\n")
    (project / "run.sh").write_text("if [ -p ready.fifo ]; then cat ready.fifo; fi\n. ./lib.sh\n")
    (project / "lib.sh").write_text("echo approved\n")
    assert callable(swap)
    fake.script(
        [
            *turn(unconfined(first, "first")),
            *turn(background(swapper(swap(home)), "job")),
            *turn(unconfined(later, "later")),
        ]
    )
    user = User()
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        for step in range(3):
            if step == 1:
                os.mkfifo(project / "ready.fifo")  # after the first run, which it would block
            assert await client.prompt(sid, f"step {step}") == {"stopReason": "end_turn"}
    sent = everything_sent(fake)
    assert KEY not in sent and CHANGED not in sent
    # The "always" is not applied while the job could still change what the command runs;
    # the question says why.
    assert user.asked_for() == ["first", "later"]
    assert "sandboxed command is still running" in json.dumps(user.asked[1])


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor-terminal"])
async def test_an_always_outside_the_sandbox_still_runs_unasked_once_sandboxed_commands_ended(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    # The everyday flow, Zed's included (its terminal runs the sandboxed launch, and the
    # agent waits for it): a sandboxed command that has ended holds nothing off.
    (project / "README.md").write_text("readme-text-0451\n")
    fake.script(
        [
            *turn(unconfined("cat README.md", "first")),
            *turn(sandboxed("echo built > out.txt", "build")),
            *turn(unconfined("cat README.md", "later")),
        ]
    )
    user = User()
    async with connected(server_env(home, fake), capabilities, permission=user) as (_, client):
        await run_turns(client, project, 3)
    assert user.asked_for() == ["first"]
    assert (project / "out.txt").read_text() == "built\n"
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert results[-1].count("readme-text-0451") == 1 and "Exit code: 0" in results[-1], results


async def test_a_background_command_outside_the_sandbox_asks_despite_an_always(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # Nothing could keep sandboxed commands off for as long as it runs.
    (project / "README.md").write_text("readme\n")
    later = ToolCallSpec(
        "terminal", {"command": "cat README.md", "unconfined": True, "background": True}, id="bg"
    )
    fake.script([*turn(unconfined("cat README.md", "first")), *turn(later)])
    user = User()
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        await run_turns(client, project, 2)
    assert user.asked_for() == ["first", "bg"]
    assert "in the background outside the sandbox" in json.dumps(user.asked[1])


async def test_the_sandbox_cannot_see_or_drop_the_lock_its_launch_holds(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # flock holds it outside and closes it before bwrap starts; the agent's home, where
    # the file lives, is hidden inside.
    lock = home / ".hermes-acp" / "sandbox" / "alive.lock"
    probe = (
        "for f in /proc/self/fd/* /proc/1/fd/*; do readlink $f; done | grep -q alive.lock && echo FD-SEEN; "
        f"[ -e {lock} ] && echo LOCK-SEEN; flock -u {lock} true && echo UNLOCKED; "
        f"rm {lock} && echo REMOVED; echo probed"
    )
    fake.script(turn(sandboxed(probe, "probe")))
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        await run_turns(client, project, 1)
    [result] = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "probed" in result, result
    assert not {"FD-SEEN", "LOCK-SEEN", "UNLOCKED", "REMOVED"} & set(result.split()), result
    assert lock.is_file()


def waiting_launches(lock: Path) -> list[str]:
    """The requests blocked on `lock` (/proc/locks' `->` lines): a launch that waits for it,
    whether the agent (a local launch) or `flock` (an editor terminal's) asked."""
    inode = f":{lock.stat().st_ino}"
    lines = Path("/proc/locks").read_text().splitlines()
    return [line for line in lines if "->" in line.split() and any(f.endswith(inode) for f in line.split())]


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor-terminal"])
async def test_a_sandboxed_command_started_meanwhile_waits_for_the_unconfined_one(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    # Another session's sandboxed command neither fails nor starts in the middle: it
    # waits until the command the "always" covered has ended.
    (project / "README.md").write_text("readme-text-0451\n")
    gate = project / "gate.fifo"
    fake.script(
        [
            *turn(unconfined("cat README.md", "first")),
            Reply(tool_calls=[unconfined("cat gate.fifo README.md", "gated")]),
            Reply(tool_calls=[sandboxed("echo sandboxed >> log.txt", "meanwhile")]),
            Reply(text="Done."),
            Reply(text="Done."),
        ]
    )
    lock = home / ".hermes-acp" / "sandbox" / "alive.lock"
    user = User()
    async with connected(server_env(home, fake), capabilities, permission=user) as (_, client):
        first = await client.session_in_mode(project, "auto")
        assert await client.prompt(first, "step 0") == {"stopReason": "end_turn"}
        os.mkfifo(gate)
        gated = client.start_prompt(first, "step 1")
        writer = await asyncio.to_thread(os.open, gate, os.O_WRONLY)  # cat is reading it: it runs
        try:
            second = await client.session_in_mode(project, "auto")
            meanwhile = client.start_prompt(second, "step 2")
            await client.wait_for(lambda: waiting_launches(lock))
            assert not (project / "log.txt").exists()
        finally:
            os.close(writer)
        assert await gated == {"stopReason": "end_turn"}
        assert await meanwhile == {"stopReason": "end_turn"}
    assert user.asked_for() == ["first"]
    assert (project / "log.txt").read_text() == "sandboxed\n"


@pytest.mark.parametrize(
    "command",
    ["cp -a sub copy && cat copy/notes.md", "mkdir w && cp -r sub w && cat w/sub/notes.md"],
)
async def test_an_always_does_not_cover_a_line_that_reads_what_it_just_copied(
    fake: FakeProvider, home: Path, project: Path, command: str
) -> None:
    # Within one command line the names are made after the check: `cp -a` copies the link
    # a sandboxed command left in `sub/` (to the key), and `cat` follows it, outside.
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text(f"{KEY}\n")
    (project / "sub").mkdir()
    (project / "sub" / "notes.md").write_text("notes\n")
    fake.script(
        [
            *turn(unconfined(command, "first")),
            *turn(sandboxed(f"rm -rf copy w && ln -sf {home}/.ssh/id_ed25519 sub/notes.md", "link")),
            *turn(unconfined(command, "later")),
        ]
    )
    user = User()
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        await run_turns(client, project, 3)
    assert KEY not in everything_sent(fake)
    assert user.asked_for() == ["first", "later"]
    assert "allow_always" not in {o["optionId"] for o in user.asked[0]["options"]}
