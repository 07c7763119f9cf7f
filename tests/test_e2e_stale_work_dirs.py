"""Each local command's cache overlay gets a fresh work dir under the agent's home
(core/sandbox/work_dirs.py), given back when the session's commands end. An agent killed
mid-command (kill -9) never gave them back: they stayed forever, one set per killed
command. The next agent on that home now removes them when it makes a sandbox, and only
those: a live agent's dirs, mid-command, stay and its command still writes its cache; a link
in their place is removed as a link, never followed."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.tool_turns import tool_results
from tests.support.waiting import until

LOCAL = PLAIN_CAPABILITIES | {"terminal": False}

# A workspace script (so every cache gets an overlay, and a work dir of its own): it says it
# runs, waits on the test's FIFO, then writes its cache.
HOLD = """#!/bin/sh
touch running
read line < go
echo "$1" >> ~/.npm/log && echo "wrote $1"
"""


def project_holding(root: Path) -> Path:
    root.mkdir()
    (root / "hold.sh").write_text(HOLD)
    (root / "hold.sh").chmod(0o755)
    os.mkfifo(root / "go")
    return root


def release(project: Path) -> None:
    """Let the script's `read` go on (O_RDWR: never blocks, reader or not)."""
    fd = os.open(project / "go", os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def work_dirs(home: Path) -> set[str]:
    """Every entry of every cache layer's `works` folder: `layer/name`."""
    caches = home / ".hermes-acp" / "sandbox" / "caches"
    found: set[str] = set()
    for layer in caches.iterdir() if caches.is_dir() else ():
        works = layer / "works"
        if works.is_dir():
            found.update(f"{layer.name}/{name}" for name in os.listdir(works))
    return found


def of_pid(entries: set[str], pid: int) -> set[str]:
    return {e for e in entries if e.split("/", 1)[1].startswith((f"p{pid}-", f"{pid}-"))}


async def start_holding(
    client: AcpClient, fake: FakeProvider, project: Path, word: str
) -> asyncio.Task[dict[str, object]]:
    sid = await client.session_in_mode(project, "auto")
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("terminal", {"command": f"./hold.sh {word}"}, id=f"call_{word}")])]
    )
    fake.add(Reply(text="Done."))
    prompt = client.start_prompt(sid, "build it")
    await until(lambda: (project / "running").exists(), f"{word}'s command to run")
    return prompt


async def test_a_killed_agents_work_dirs_go_at_the_next_start_and_a_live_ones_stay(
    fake: FakeProvider, home: Path, tmp_path: Path
) -> None:
    (home / ".npm").mkdir()
    env = server_env(home, fake)
    killed_project = project_holding(tmp_path / "killed")
    live_project = project_holding(tmp_path / "live")

    async with spawn_server(env, check_exit=False) as killed:
        client = killed.sdk_client(LOCAL, permission="allow_once")
        await client.initialize()
        await start_holding(client, fake, killed_project, "killed")
        left = of_pid(work_dirs(home), killed.pid)
        assert left  # its command's own work dirs
        os.kill(killed.pid, signal.SIGKILL)
        assert await killed.wait() == -signal.SIGKILL
        release(killed_project)  # whatever of its sandbox still waits
    assert of_pid(work_dirs(home), killed.pid) == left  # nobody gave them back

    caches = home / ".hermes-acp" / "sandbox" / "caches"
    layer = next(p for p in caches.iterdir() if (p / "works").is_dir())
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine\n")
    (layer / "works" / "p1-abc").symlink_to(outside)  # a link where a stale folder would be
    gone_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has it
    (layer / "works" / f"{gone_pid}-1" / "work").mkdir(parents=True)  # the earlier naming

    async with spawn_server(env) as live:
        live_client = live.sdk_client(LOCAL, permission="allow_once")
        await live_client.initialize()
        held = await start_holding(live_client, fake, live_project, "live")
        kept = of_pid(work_dirs(home), live.pid)
        assert kept

        try:
            async with spawn_server(env) as later:
                later_client = later.sdk_client(LOCAL, permission="allow_once")
                await later_client.initialize()
                await later_client.new_session(tmp_path / "killed")  # its sandbox: the sweep
                now = work_dirs(home)
                assert of_pid(now, killed.pid) == set()
                assert f"{layer.name}/p1-abc" not in now and f"{layer.name}/{gone_pid}-1" not in now
                assert (outside / "keep").read_text() == "mine\n"
                assert of_pid(now, live.pid) == kept
        finally:
            release(live_project)  # its command ends, whatever the checks found
        assert await held == {"stopReason": "end_turn"}
        assert tool_results(fake)[-1].strip().endswith("wrote live")
