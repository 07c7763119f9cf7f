"""A local launch's mounts travel to bwrap on a pipe, written while bwrap is already
starting (`hermes_core.sandbox.late_args`, issue 19 "sandbox cost per command < 20 ms").
What bwrap starts must never run with less than the whole fence: options cut short run
nothing, options that could not be worked out start nothing, and the whole options give
the same confinement as before."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes_core.fence.scope import WorkspaceError
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.sandbox.late_args import MARKER, LateArgs
from tests.test_sandbox_fence import home, repo, run, sandboxed

__all__ = ["home", "repo"]  # the fixtures, shared with test_sandbox_fence

PLANT = "echo planted > planted.txt; echo [$" + MARKER + "]; ls /proc/self/fd/ | tr '\\n' ' '"


def _start(late: LateArgs, argv: list[str], repo: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        argv, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(late.child_fd,)
    )
    late.close_child_end()
    return process


_kept: list[Sandbox] = []  # alive while its launch runs: its cgroups go with it


def _launch(repo: Path, home: Path) -> tuple[LateArgs, list[str], list[str]]:
    """bwrap's start (its own options and the checked line) and the options that follow."""
    _, sandbox = sandboxed(repo, home)
    _kept.append(sandbox)
    late = LateArgs()
    head, inside = sandbox.launch_head(["/bin/bash", "-c", PLANT], own_fds=late.options(), alive_held=True)
    options = sandbox.launch_options(cwd=repo, command=PLANT)
    return late, [*head, "--", *late.checked(inside)], options


def test_the_whole_options_confine_the_command_and_hide_the_marker(repo: Path, home: Path) -> None:
    late, argv, options = _launch(repo, home)
    process = _start(late, argv, repo)
    late.send(options)
    output, _ = process.communicate()
    assert process.returncode == 0, output
    marker, descriptors = output.decode().splitlines()
    assert marker == "[]"  # checked, then unset: the command never sees it
    assert str(late.child_fd) not in descriptors.split()  # nor the pipe bwrap left open
    assert (repo / "planted.txt").read_text() == "planted\n"
    # the fence came with the options: git's config stays read-only
    assert "--ro-bind" in options and str(repo / ".git" / "config") in options


def test_options_cut_short_run_nothing(repo: Path, home: Path) -> None:
    # The agent killed while writing: everything but the marker arrived, and bwrap would
    # start the line with part of the fence. The line checks the marker first.
    late, argv, options = _launch(repo, home)
    process = _start(late, argv, repo)
    late._write_all("\0".join([*options, ""]).encode())  # what a cut write leaves
    late._close(late._write)
    output, _ = process.communicate()
    assert process.returncode == 126, output
    assert not (repo / "planted.txt").exists()


def test_options_that_could_not_be_worked_out_start_nothing(repo: Path, home: Path) -> None:
    late, argv, _ = _launch(repo, home)
    process = _start(late, argv, repo)
    late.abandon()
    output, _ = process.communicate()
    assert process.returncode != 0
    assert b"hermes-acp-launch-abandoned" in output  # bwrap refused it before any mount
    assert not (repo / "planted.txt").exists()


async def test_a_launch_whose_mounts_fail_runs_nothing_through_the_agent(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, sandbox = sandboxed(repo, home)

    def failing(**_: object) -> list[str]:
        raise OSError("the mounts could not be worked out")

    monkeypatch.setattr(sandbox, "launch_options", failing)
    with pytest.raises(WorkspaceError, match="could not be worked out"):
        await run(workspace, PLANT, home)
    assert not (repo / "planted.txt").exists()
    monkeypatch.undo()
    code, output = await run(workspace, PLANT, home)  # the session's next command runs
    assert code == 0, output
    assert (repo / "planted.txt").exists()
