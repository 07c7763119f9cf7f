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
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Unpack

from hermes_core.execution.commands import CommandExit, CommandOptions
from hermes_core.fence.scope import WorkspaceError, WorkspaceScope
from hermes_core.sandbox.alive_lock import keep_until_exit, release_for
from hermes_core.sandbox.pid_one import PidOne, wait_gone, when_gone
from hermes_core.sandbox.seccomp import SeccompFd

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.sandbox.limits import LaunchThread
    from hermes_core.sandbox.unconfined import UnconfinedGuard

logger = logging.getLogger(__name__)

OUTPUT_LIMIT = 64_000  # characters of a command's output kept, unless the caller says
# After the shell exits, how long to wait for the pipe to close. Children it left
# behind (`server &`) keep the pipe open; the command counts as finished anyway.
DRAIN_AFTER_EXIT = 0.25
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
    if sandbox is not None:
        pid_one = PidOne()  # the command ends once its sandbox's pid 1 is gone
        filtered = SeccompFd()
        thread = sandbox.launch_thread()
        in_cgroup = await asyncio.wrap_future(thread.in_cgroup)
        argv = sandbox.wrap(
            argv,
            cwd=directory.resolve(),
            in_cgroup=in_cgroup,
            command=command,
            search_path=full_env.get("PATH"),
            alive_held=sandbox.alive is not None,
            own_fds=[*pid_one.options(), *filtered.options()],
        )
        full_env = sandbox.environment(full_env)
    output_limit = options.get("output_limit", OUTPUT_LIMIT)
    run = LocalCommand(output_limit=output_limit, kill_grace=workspace.kill_grace)
    run.sandbox = sandbox

    # Not the sandbox itself: the launch thread may keep this closure after the session.
    alive = sandbox.alive if sandbox is not None else None

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
                pass_fds=(*pid_one.child_fds, *filtered.child_fds) if pid_one and filtered else (),
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
        if held is not None:
            keep_until_exit(process, held)
        if pid_one is not None:
            pid_one.attach(process)
        return process

    try:
        process = await _spawn_on(thread, spawn) if thread is not None else spawn()
    except OSError as exc:
        if sandbox is not None:
            sandbox.after_command()  # it never ran
        raise WorkspaceError(f"cannot start the command in {directory}: {exc}") from exc
    except asyncio.CancelledError:
        if sandbox is not None:
            sandbox.after_command()  # it never ran, or is being killed (`_spawn_on`)
        raise
    run._attach(await _Child.watch(process, run))
    if sandbox is None:
        # bwrap dies with the agent (--die-with-parent); an unconfined command needs a guard.
        from hermes_core.sandbox.unconfined import UnconfinedGuard

        run._guard = UnconfinedGuard(process.pid)
    return run


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


class _Child:
    """A started command as `LocalCommand` sees it: its pid, its exit status (watched through
    a pidfd on the event loop, no thread per command), and its output pipe."""

    def __init__(self, process: subprocess.Popen[bytes], pipe: asyncio.ReadTransport) -> None:
        self._process = process
        self._pipe = pipe

    @classmethod
    async def watch(cls, process: subprocess.Popen[bytes], run: LocalCommand) -> _Child:
        loop = asyncio.get_running_loop()
        assert process.stdout is not None
        pipe, _ = await loop.connect_read_pipe(lambda: _OutputProtocol(run), process.stdout)
        _watch_exit(loop, process, run._on_exit)
        return cls(process, pipe)

    def get_pid(self) -> int:
        return self._process.pid

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self._process

    def get_returncode(self) -> int | None:
        return self._process.returncode

    def read_now(self) -> tuple[bytes, bool]:
        """What the pipe holds right now, without waiting, and whether it reached its end."""
        assert self._process.stdout is not None
        if self._process.stdout.closed:  # released while its sandbox was still ending
            return b"", True
        fd = self._process.stdout.fileno()
        chunks: list[bytes] = []
        for _ in range(64):  # a pipe holds 64 KiB; a writer still alive inside is being killed
            try:
                chunk = os.read(fd, 65536)  # non-blocking: connect_read_pipe made it so
            except (BlockingIOError, InterruptedError):
                return b"".join(chunks), False
            except OSError:  # closed under us: nothing more to read
                return b"".join(chunks), True
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
        return b"".join(chunks), False

    def close(self) -> None:
        """Stop reading; a process still running gets SIGKILL (as asyncio's transport did)."""
        self._pipe.close()
        if self._process.returncode is None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()


def _watch_exit(
    loop: asyncio.AbstractEventLoop, process: subprocess.Popen[bytes], on_exit: Callable[[], None]
) -> None:
    """Call `on_exit` on the loop once `process` has exited and been reaped."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # a kernel before 5.3: a thread waits instead

        def wait() -> None:
            process.wait()
            wait_gone(process)
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(on_exit)

        threading.Thread(target=wait, name=f"wait-{process.pid}", daemon=True).start()
        return

    def readable() -> None:
        if process.poll() is None:
            return
        loop.remove_reader(pidfd)
        os.close(pidfd)
        when_gone(loop, process, on_exit)  # a sandbox's: once nothing in it is left

    loop.add_reader(pidfd, readable)


class _OutputProtocol(asyncio.Protocol):
    def __init__(self, run: LocalCommand) -> None:
        self._run = run

    def data_received(self, data: bytes) -> None:
        self._run._on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._run._on_eof()


class LocalCommand:
    """A local subprocess in its own process group; stdout and stderr merged.

    Output is collected whether or not anyone streams it, so a background command
    never blocks on a full pipe. `stream()` has one consumer.
    """

    terminal_id: str | None = None
    sandbox: Sandbox | None = None  # the sandbox it runs in, if it does
    _guard: UnconfinedGuard | None = None

    def __init__(self, *, output_limit: int, kill_grace: float) -> None:
        self._limit = max(1, output_limit)
        self._grace = kill_grace
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._transport: _Child | None = None
        self._output: list[str] = []
        self._output_chars = 0
        self._truncated = False
        self._pending: list[str] = []  # decoded, not yet streamed
        self._pending_chars = 0
        self._changed = asyncio.Event()
        self._exited = asyncio.Event()
        self._done = asyncio.Event()  # exited and the pipe drained (or gave up waiting for it)
        self._eof = False
        self._exit: CommandExit | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._released = False

    @property
    def pid(self) -> int | None:
        return self._transport.get_pid() if self._transport else None

    @property
    def running(self) -> bool:
        return not self._exited.is_set()

    # -- callbacks from the protocol ---------------------------------------------------

    def _attach(self, transport: _Child) -> None:
        self._transport = transport

    def _on_data(self, data: bytes) -> None:
        self._add(self._decoder.decode(data))

    def _on_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        self._add(self._decoder.decode(b"", final=True))
        if self._exited.is_set():
            self._finish()

    def _on_exit(self) -> None:
        self._exited.set()
        if self.sandbox is not None:
            if self._transport is not None:
                release_for(self._transport.process)
            self.sandbox.after_command()
            # bwrap exits once the command has; its pid 1 holds the pipe until the mounts
            # are torn down. The command wrote before it exited: all of it is in the pipe.
            # Anything left running inside is being killed with the sandbox.
            self._read_rest()
            self._finish()
            return
        if self._eof:
            self._finish()
        else:
            self._drain_timer = asyncio.get_running_loop().call_later(DRAIN_AFTER_EXIT, self._finish)

    def _read_rest(self) -> None:
        if self._transport is None or self._eof:
            return
        data, ended = self._transport.read_now()
        self._on_data(data)
        if ended:
            self._on_eof()
        else:
            self._add(self._decoder.decode(b"", final=True))

    def _add(self, text: str) -> None:
        if not text:
            return
        self._output.append(text)
        self._output_chars += len(text)
        if self._output_chars > self._limit:
            self._truncated = True
            if self._output_chars > 2 * self._limit:  # trim now and then, not on every chunk
                self._output, self._output_chars = _keep_tail(self._output, self._limit)
        self._pending.append(text)
        self._pending_chars += len(text)
        if self._pending_chars > 2 * self._limit:  # nobody is streaming; keep it bounded
            self._pending, self._pending_chars = _keep_tail(self._pending, self._limit)
        self._changed.set()

    def _finish(self) -> None:
        if self._done.is_set():
            return
        if self._guard is not None and self._eof:
            # Exited and nothing holds its output open: no child of it is left to kill.
            self._guard.release()
            self._guard = None
        if self._drain_timer is not None:
            self._drain_timer.cancel()
        code = self._transport.get_returncode() if self._transport else None
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            self._exit = CommandExit(None, name)
        else:
            self._exit = CommandExit(code)
        self._done.set()
        self._changed.set()

    # -- RunningCommand ----------------------------------------------------------------

    async def stream(self) -> AsyncIterator[str]:
        while True:
            if self._pending:
                chunk = "".join(self._pending)
                self._pending.clear()
                self._pending_chars = 0
                yield chunk
                continue
            if self._done.is_set():
                return
            self._changed.clear()
            await self._changed.wait()

    async def wait(self) -> CommandExit:
        await self._done.wait()
        assert self._exit is not None
        return self._exit

    async def output(self) -> tuple[str, bool]:
        text = "".join(self._output)
        return text[-self._limit :], self._truncated

    async def kill(self) -> None:
        """SIGTERM to the whole group, then SIGKILL after the grace period. Also reaches
        children that outlived the shell."""
        if self._transport is None or self._released:
            return
        if not self._exited.is_set():
            self._signal_group(signal.SIGTERM)
            try:
                await asyncio.wait_for(self._exited.wait(), self._grace)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                self._signal_group(signal.SIGKILL)
                raise
        self._signal_group(signal.SIGKILL)
        if not self._exited.is_set():
            # Let the child watcher reap it, so wait() reports SIGKILL and release() does
            # not race the watcher for the exit status.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), 1.0)

    async def release(self) -> None:
        if self._transport is None or self._released:
            return
        try:
            await self.kill()
        finally:
            # After this the group id may be reused; never signal it again.
            self._released = True
            self._transport.close()
            if self._guard is not None:
                self._guard.release()
                self._guard = None

    def _signal_group(self, sig: signal.Signals) -> None:
        pid = self.pid
        if pid is None:
            return
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:  # the group id was reused by someone else's process
            logger.debug("not allowed to signal process group %s", pid)


def _keep_tail(chunks: list[str], limit: int) -> tuple[list[str], int]:
    tail = "".join(chunks)[-limit:]
    return [tail], len(tail)
