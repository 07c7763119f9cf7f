"""Every server left its sessions' empty `hermes-acp-<pid>-<n>` cgroups behind (`pids` and
`memory`, issue 19): it ends with `os._exit`, its launch thread (a task of both cgroups)
never ran again to leave them, and the sweep only ran when another server made a cgroup in
the same parent. On a shared machine they piled up in other jobs' cgroups. End to end
through the real server, where a cgroup v1 hierarchy is writable (root, this CI)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from hermes_core.sandbox.limits import PIDS_V1, own_v1_cgroup
from hermes_core.sandbox.memory_cap import MEMORY_V1
from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider
from tests.support.red_team import LOCAL, run_turns, sandboxed, turn

pytestmark = pytest.mark.asyncio(loop_scope="module")


def cgroups_of(pid: int) -> list[Path]:
    """The cgroups server `pid` made (a child of this test: the same parents as ours)."""
    found: list[Path] = []
    for hierarchy, controller in ((PIDS_V1, "pids"), (MEMORY_V1, "memory")):
        parent = own_v1_cgroup(hierarchy, controller)
        if parent is not None:
            found += sorted(parent.glob(f"hermes-acp-{pid}-*"))
    return found


def env_with_cap(home: Path, fake: FakeProvider) -> dict[str, str]:
    return server_env(home, fake, HERMES_ACP_SANDBOX_MEMORY_MB="512")


async def test_a_server_that_ends_removes_its_cgroups(fake: FakeProvider, home: Path, project: Path) -> None:
    fake.script(turn(sandboxed("echo hi", "c")))
    async with connected(env_with_cap(home, fake), LOCAL) as (server, client):
        await run_turns(client, project, 1)
        made = cgroups_of(server.pid)
        assert {h.name for p in made for h in (PIDS_V1, MEMORY_V1) if p.is_relative_to(h)} == {
            "pids",
            "memory",
        }  # writable here: both made
        assert await server.stop() == 0
    assert [p for p in made if p.exists()] == []


async def test_a_killed_servers_cgroups_go_with_the_next_servers_first(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    fake.script([*turn(sandboxed("echo one", "c1")), *turn(sandboxed("echo two", "c2"))])
    async with connected(env_with_cap(home, fake), LOCAL, permission="allow_once") as (server, client):
        await run_turns(client, project, 1)
        killed = cgroups_of(server.pid)
        assert killed
        os.kill(server.pid, signal.SIGKILL)  # our own child's host pid, never a sandbox's
        await server.process.wait()
    assert all(p.exists() for p in killed)  # no exit handler ran
    async with connected(env_with_cap(home, fake), LOCAL) as (_, client):
        await run_turns(client, project, 1)
    assert [p for p in killed if p.exists()] == []
