"""A started local command as the event loop watches it: its exit through a pidfd (no
thread per command), its output pipe read by a protocol, what the pipe holds read at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import Callable

from hermes_core.sandbox.pid_one import wait_gone, when_gone


class Child:
    """A started command as `LocalCommand` sees it: its pid, its exit status (watched through
    a pidfd on the event loop, no thread per command), and its output pipe."""

    def __init__(self, process: subprocess.Popen[bytes], pipe: asyncio.ReadTransport) -> None:
        self._process = process
        self._pipe = pipe

    @classmethod
    async def watch(
        cls,
        process: subprocess.Popen[bytes],
        *,
        on_data: Callable[[bytes], None],
        on_eof: Callable[[], None],
        on_exit: Callable[[], None],
    ) -> Child:
        loop = asyncio.get_running_loop()
        assert process.stdout is not None
        pipe, _ = await loop.connect_read_pipe(lambda: _OutputProtocol(on_data, on_eof), process.stdout)
        _watch_exit(loop, process, on_exit)
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
    """Call `on_exit` on the loop once `process` has exited and been reaped (and, for a
    sandbox, once its pid 1 is gone: `hermes_core.sandbox.pid_one`)."""
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
    def __init__(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self._on_data = on_data
        self._on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        self._on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_eof()
