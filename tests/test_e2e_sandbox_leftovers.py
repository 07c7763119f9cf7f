"""What a sandboxed command leaves running is gone before the command counts as ended, and
the alive lock stays held until then (issue 19).

bwrap returns once the command has exited; the kernel kills what it left behind just
after, when bwrap's pid 1 dies. Meanwhile a leftover daemon could still swap a name that a
stored "always" outside the sandbox then runs. The window is held open with no hook in
the server: the test freezes the leftover (cgroup v1 freezer), so the kernel's kill cannot
finish until it is thawed. Before the fix the command was reported ended, and the lock
free, while the leftover lived.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider
from tests.support.red_team import LOCAL, sandboxed, turn

FREEZER = Path("/sys/fs/cgroup/freezer")
PF_EXITING = 0x4
BARRIER = 20  # round trips to the server after pid 1 began to exit (see below)


def process_with(marker: str) -> int | None:
    """The process whose argv[0] is `marker` (not the command lines that name it)."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(entry.path, "cmdline").read_bytes().split(b"\0")[0] == marker.encode():
                    return int(entry.name)
    return None


def status_field(pid: int, name: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split()[1]
    raise AssertionError(f"no {name} for {pid}")


def exiting(pid: int) -> bool:
    """Whether `pid` has begun to exit (or is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    flags = int(stat.rsplit(")", 1)[1].split()[6])  # the 9th field; the 3rd follows the name
    return bool(flags & PF_EXITING)


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and status_field(pid, "State") != "Z"


@contextlib.contextmanager
def frozen(pid: int) -> Iterator[None]:
    """`pid` frozen until the block ends: a killed frozen task lives on until thawed."""
    group = FREEZER / f"hermes-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(f"{pid}\n")
        (group / "freezer.state").write_text("FROZEN\n")
        yield
    finally:
        # Out first (it runs again, and dies if it was killed meanwhile), then the empty
        # group goes; a group still holding a dying task could not be removed.
        with contextlib.suppress(OSError):
            (FREEZER / "cgroup.procs").write_text(f"{pid}\n")
        (group / "freezer.state").write_text("THAWED\n")
        group.rmdir()


def lock_is_free(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def ended(client: AcpClient, call_id: str) -> bool:
    return any(u.get("status") in ("completed", "failed") for u in client.tool_updates(call_id))


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor-terminal"])
async def test_a_leftover_daemon_keeps_its_command_running_and_the_lock_held_until_it_is_gone(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    marker = f"leftover-{uuid.uuid4().hex[:8]}"
    gate = project / "gate.fifo"
    os.mkfifo(gate)
    # The daemon outlives the command line (its subshell exits at once); the line waits
    # at the gate so the test can freeze the daemon first.
    command = f"(exec -a {marker} sleep 3000 &); cat gate.fifo; echo line-done"
    fake.script(turn(sandboxed(command, "job")))
    lock = home / ".hermes-acp" / "sandbox" / "alive.lock"
    async with connected(server_env(home, fake), capabilities) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        prompt = client.start_prompt(sid, "go")
        daemon = await client.wait_for(lambda: process_with(marker))
        pid_one = int(status_field(daemon, "PPid"))
        with frozen(daemon):
            writer = await asyncio.to_thread(os.open, gate, os.O_WRONLY)
            os.close(writer)  # the line goes on and exits; the daemon stays, frozen
            await client.wait_for(lambda: exiting(pid_one))
            # Whatever the server does once bwrap has returned takes it a few turns of its
            # loop: after as many round trips as this, the end would have been reported.
            for _ in range(BARRIER):
                await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
            assert alive(daemon)
            assert not ended(client, "job"), client.tool_updates("job")
            assert not lock_is_free(lock)
        assert await prompt == {"stopReason": "end_turn"}
        assert not alive(daemon)
    assert ended(client, "job")
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "line-done" in results[-1], results
    assert lock_is_free(lock)


async def test_a_cancelled_command_holds_the_lock_until_what_it_left_is_gone(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    marker = f"leftover-{uuid.uuid4().hex[:8]}"
    fake.script(turn(sandboxed(f"(exec -a {marker} sleep 3000 &); sleep 3000", "job")))
    lock = home / ".hermes-acp" / "sandbox" / "alive.lock"
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        prompt = client.start_prompt(sid, "go")
        daemon = await client.wait_for(lambda: process_with(marker))
        with frozen(daemon):
            await client.cancel(sid)
            assert await prompt == {"stopReason": "cancelled"}
            # The command was killed, bwrap is gone; the leftover is not, so nor is the lock.
            assert alive(daemon)
            assert not lock_is_free(lock)
        await client.wait_for(lambda: not alive(daemon))
        await client.wait_for(lambda: lock_is_free(lock))
