"""Commands in the workspace: whether one runs in the sandbox, and local subprocesses.

A local command runs in its own process group (so a kill reaches what it started), with
stdout and stderr merged and collected whether or not anyone streams them. A sandboxed one
is started from its session's launch thread (`hermes_core.sandbox.limits.LaunchThread`),
off the event loop and inside the session's pids cgroup where there is one: asyncio would
fork it from the loop's thread, and moving each command into the cgroup costs more than
the rest of the launch.

A sandboxed command is finished once bwrap has exited and its pid 1 is gone, which the
kernel reports only after it has killed whatever the command left running inside
(`hermes_core.sandbox.pid_one`); what it wrote is read at once, without waiting for the
output pipe to close.

The started command: `local_command.LocalCommand` (output, exit, kill), watched on the
event loop through `child.Child` (its pidfd and output pipe).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Unpack

from hermes_core.execution.child import Child
from hermes_core.execution.commands import CommandOptions
from hermes_core.execution.local_command import LocalCommand
from hermes_core.fence.scope import WorkspaceError, WorkspaceScope
from hermes_core.sandbox.alive_lock import keep_until_exit, release_for
from hermes_core.sandbox.late_args import LateArgs
from hermes_core.sandbox.pid_one import PidOne, wait_gone
from hermes_core.sandbox.seccomp import SeccompFd

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.sandbox.limits import LaunchThread

OUTPUT_LIMIT = 64_000  # characters of a command's output kept, unless the caller says
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


class CommandHost(Protocol):
    """Where a local command runs (`workspace.LocalWorkspace`)."""

    @property
    def scope(self) -> WorkspaceScope: ...

    @property
    def sandbox(self) -> Sandbox | None: ...

    @property
    def kill_grace(self) -> float: ...


def confining(sandbox: Sandbox | None, options: CommandOptions) -> Sandbox | None:
    """The sandbox a command runs in (None: unconfined); raises when it must be confined
    and the sandbox cannot start."""
    if sandbox is None or options.get("unconfined", False) or sandbox.confinement == "off":
        return None
    if sandbox.confinement == "unavailable":
        # The policy asks before every command when the sandbox cannot start, and an
        # approval arrives here as `unconfined`; anything else fails closed.
        raise WorkspaceError(f"the sandbox cannot start ({sandbox.availability.reason})")
    return sandbox


async def start_local_command(
    workspace: CommandHost, command: str, **options: Unpack[CommandOptions]
) -> LocalCommand:
    cwd = options.get("cwd")
    directory = Path(cwd) if cwd is not None else workspace.scope.cwd
    full_env = {**os.environ, **(options.get("env") or {})}
    sandbox = confining(workspace.sandbox, options)
    argv = [SHELL, "-c", command]
    thread: LaunchThread | None = None
    pid_one: PidOne | None = None
    filtered: SeccompFd | None = None
    late: LateArgs | None = None
    if sandbox is not None:
        pid_one = PidOne()  # the command ends once its sandbox's pid 1 is gone
        filtered = SeccompFd()
        late = LateArgs() if sandbox.mounts_on_a_pipe and LateArgs.fits(argv) else None  # mounts follow
        thread = sandbox.launch_thread()
        joined = thread.in_cgroup
        in_cgroup = joined.result() if joined.done() else await asyncio.wrap_future(joined)
        own_fds = [*pid_one.options(), *filtered.options(), *(late.options() if late else [])]
        head, inside = sandbox.launch_head(
            argv, in_cgroup=in_cgroup, alive_held=sandbox.alive is not None, own_fds=own_fds
        )
        # Counted from here: every way out before the command is watched uncounts it.
        try:
            search_path = full_env.get("PATH")
            if late is not None:
                argv = [*head, "--", *late.checked(inside)]
            else:
                fence = sandbox.launch_options(
                    cwd=directory.resolve(), command=command, search_path=search_path
                )
                argv = [*head, *fence, "--", *inside]
            full_env = sandbox.environment(full_env)
        except BaseException:
            sandbox.after_command()
            raise
    output_limit = options.get("output_limit", OUTPUT_LIMIT)
    run = LocalCommand(output_limit=output_limit, kill_grace=workspace.kill_grace)
    run.sandbox = sandbox

    # Not the sandbox itself: the launch thread may keep this closure after the session.
    alive = sandbox.alive if sandbox is not None else None

    child_fds: tuple[int, ...] = ()
    if pid_one is not None and filtered is not None:
        child_fds = (*pid_one.child_fds, *filtered.child_fds, *((late.child_fd,) if late else ()))

    def spawn() -> subprocess.Popen[bytes]:
        # Held from before bwrap starts until it has exited (`alive_lock`): a stored "always"
        # outside the sandbox is not applied meanwhile. Taken here, off the event loop: it
        # waits while such a command runs.
        held = alive.hold_shared() if alive is not None else None
        try:
            process = subprocess.Popen(
                argv,
                cwd=directory,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so kill() reaches its children
                pass_fds=child_fds,
            )
        except BaseException:
            if held is not None:
                held.release()
            if pid_one is not None:
                pid_one.close()
            raise
        finally:
            if filtered is not None:
                filtered.close()  # bwrap has its own copy
            if late is not None:
                late.close_child_end()
        if held is not None:
            keep_until_exit(process, held)
        if pid_one is not None:
            pid_one.attach(process)
        return process

    try:
        if thread is None:
            process = spawn()
        elif late is None:
            process = await _spawn_on(thread, spawn)
        else:
            assert sandbox is not None  # a late launch is a sandboxed one
            later = functools.partial(
                sandbox.launch_options, cwd=directory.resolve(), command=command, search_path=search_path
            )
            process = await _spawn_then_send(thread, spawn, late, later)
    except BaseException as exc:
        if sandbox is not None:
            sandbox.after_command()  # it never ran, or is being killed (`_spawn_on`)
        if isinstance(exc, (OSError, ValueError)):  # ValueError: a NUL in the command line
            raise WorkspaceError(f"cannot start the command in {directory}: {exc}") from exc
        raise
    run._attach(await Child.watch(process, on_data=run._on_data, on_eof=run._on_eof, on_exit=run._on_exit))
    if sandbox is None:
        # bwrap dies with the agent (--die-with-parent); an unconfined command needs a guard.
        from hermes_core.sandbox.unconfined import UnconfinedGuard

        run._guard = UnconfinedGuard(process.pid)
    return run


async def _spawn_then_send(
    thread: LaunchThread,
    spawn: Callable[[], subprocess.Popen[bytes]],
    late: LateArgs,
    options: Callable[[], list[str]],
) -> subprocess.Popen[bytes]:
    """Start bwrap on the launch thread and, meanwhile, work out its mounts here and send
    them (`late_args`): bwrap's start and the Python side overlap."""
    pending = thread.submit(spawn)
    try:
        late.send(options())
    except BaseException:
        late.abandon()  # bwrap exits without starting anything
        pending.add_done_callback(_kill_unowned)
        raise
    try:
        return await asyncio.wrap_future(pending)
    except asyncio.CancelledError:
        pending.add_done_callback(_kill_unowned)
        raise


async def _spawn_on(
    thread: LaunchThread, spawn: Callable[[], subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    pending = thread.submit(spawn)
    try:
        return await asyncio.wrap_future(pending)
    except asyncio.CancelledError:
        # Cancelled while the thread was starting it: nobody will own it, so it dies.
        pending.add_done_callback(_kill_unowned)
        raise


def _kill_unowned(pending: Future[subprocess.Popen[bytes]]) -> None:
    if pending.cancelled() or pending.exception() is not None:
        return
    process = pending.result()
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    wait_gone(process)
    release_for(process)
    if process.stdout is not None:
        process.stdout.close()


__all__ = ["OUTPUT_LIMIT", "SHELL", "CommandHost", "LocalCommand", "confining", "start_local_command"]
