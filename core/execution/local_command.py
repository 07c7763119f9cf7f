"""A local subprocess in its own process group, stdout and stderr merged: its output kept
(capped) and streamed, its exit, and its kill (the whole group, SIGTERM then SIGKILL)."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from hermes_core.execution.child import Child
from hermes_core.execution.commands import CommandExit
from hermes_core.sandbox.alive_lock import release_for

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.sandbox.unconfined import UnconfinedGuard

logger = logging.getLogger(__name__)

# After the shell exits, how long to wait for the pipe to close. Children it left
# behind (`server &`) keep the pipe open; the command counts as finished anyway.
DRAIN_AFTER_EXIT = 0.25


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
        self._transport: Child | None = None
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

    def _attach(self, transport: Child) -> None:
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
