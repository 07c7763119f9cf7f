"""A session's pids and memory cgroups are made lazily, at its first launch. Launches come
from several threads at once (a reply's parallel `read_file`s decoding images, a subagent's
session built in a worker thread beside the parent's commands): each thread made a cgroup of
its own, one was left behind on the host, and a launch that had named the other moved into
a folder already removed, so its command failed to start. Every launch must run in the one
cgroup of each kind, and the session's end must leave none behind."""

from __future__ import annotations

import gc
import os
import subprocess
import threading
from pathlib import Path

import pytest

from hermes_core.sandbox import limits, memory_cap
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.workspace import WorkspaceScope

LAUNCHES = 16


def ours(hierarchy: Path | None) -> set[str]:
    """This process's session cgroups under `hierarchy`."""
    if hierarchy is None:
        return set()
    prefix = f"hermes-acp-{os.getpid()}-"
    return {entry.name for entry in hierarchy.iterdir() if entry.name.startswith(prefix)}


def cgroup_of(report: str, controller: str) -> str:
    """The cgroup /proc/self/cgroup names for `controller`."""
    for line in report.splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path.rsplit("/", 1)[-1]
    raise AssertionError(f"no {controller} line in {report!r}")


@pytest.mark.parametrize("attempt", range(3))
def test_launches_from_many_threads_at_once_share_one_cgroup_and_leave_none(
    tmp_path: Path, attempt: int
) -> None:
    pids_base = limits._own_pids_cgroup()
    memory_base = limits.own_v1_cgroup(memory_cap.MEMORY_V1, "memory") if memory_cap.writable() else None
    if pids_base is None:
        pytest.skip("no writable pids cgroup here")
    project = tmp_path / "project"
    project.mkdir()
    before = ours(pids_base), ours(memory_base)
    sandbox = Sandbox(WorkspaceScope(project), home=tmp_path, memory_mb=512)
    assert sandbox.confinement == "sandboxed"
    start = threading.Barrier(LAUNCHES)
    reports: list[str] = []
    failures: list[str] = []

    def launch(sandbox: Sandbox) -> None:
        start.wait()  # every thread's first launch at the same moment
        argv = sandbox.wrap(["/bin/cat", "/proc/self/cgroup"], cwd=project)
        try:
            done = subprocess.run(
                argv, env=sandbox.environment(dict(os.environ)), capture_output=True, text=True, timeout=120
            )
        finally:
            sandbox.after_command()
        if done.returncode != 0:
            failures.append(done.stderr)
        else:
            reports.append(done.stdout)

    threads = [threading.Thread(target=launch, args=(sandbox,)) for _ in range(LAUNCHES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert len(reports) == LAUNCHES
    made_pids = ours(pids_base) - before[0]
    assert {cgroup_of(report, "pids") for report in reports} == made_pids and len(made_pids) == 1
    if memory_base is not None:
        made_memory = ours(memory_base) - before[1]
        assert {cgroup_of(report, "memory") for report in reports} == made_memory and len(made_memory) == 1
    del sandbox  # the session ends: its cgroups go with it
    gc.collect()
    assert ours(pids_base) == before[0]
    assert ours(memory_base) == before[1]
