"""The Workspace port: every file and process the agent touches goes through it.

`LocalWorkspace` works on the local disk and local subprocesses. The ACP side
plugs in its own implementation (editor buffers, editor terminals) that follows
the same scoping rules, which live here in `WorkspaceScope`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import secrets
import signal
import stat
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from core.errors import HermesError

if TYPE_CHECKING:
    from core.sandbox import Sandbox, UnconfinedGuard

logger = logging.getLogger(__name__)


class WorkspaceError(HermesError):
    """A file or process operation failed in a way the model should read about."""


class OutsideWorkspace(WorkspaceError):
    def __init__(self, path: str, resolved: Path, roots: tuple[Path, ...], *, links: int = 1) -> None:
        allowed = ", ".join(str(r) for r in roots)
        if links > 1:
            message = (
                f"{path!r} is a hard link ({links} names for one file); its other names may be "
                f"outside the workspace ({allowed}), so it counts as outside"
            )
        else:
            message = f"{path!r} resolves to {resolved}, which is outside the workspace ({allowed})"
        super().__init__(message)
        self.path = path
        self.resolved = resolved


class BinaryFile(WorkspaceError):
    pass


class FileTooLarge(WorkspaceError):
    pass


@dataclass(frozen=True, slots=True)
class WorkspaceScope:
    """The session's cwd plus extra allowed roots; resolves and checks paths."""

    cwd: Path
    extra_roots: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        # Resolved once, so a symlinked cwd (/tmp on macOS) compares equal to the
        # resolved paths checked against it.
        object.__setattr__(self, "cwd", Path(self.cwd).resolve())
        object.__setattr__(self, "extra_roots", tuple(Path(r).resolve() for r in self.extra_roots))

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.cwd, *self.extra_roots)

    def absolute(self, path: str | os.PathLike[str]) -> Path:
        """The path made absolute against cwd, `..` folded and symlinks followed."""
        raw = Path(os.path.expanduser(os.fspath(path)))
        if not raw.is_absolute():
            raw = self.cwd / raw
        # strict=False: a file about to be created does not exist yet, but its
        # existing parents' symlinks must still be followed.
        try:
            return raw.resolve(strict=False)
        except (RuntimeError, ValueError, OSError) as exc:  # symlink loop, NUL byte
            raise WorkspaceError(f"cannot resolve path {os.fspath(path)!r}: {exc}") from exc

    def contains(self, resolved: Path) -> bool:
        """Whether the resolved path lies under a root (by name only; see `outside`)."""
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def outside(self, resolved: Path) -> bool:
        """Whether touching the resolved path may reach beyond the workspace: a path under
        no root, or a regular file with more than one name (a hard link). Its other names
        cannot be found cheaply, and one of them may be `~/.ssh/id_rsa` or a file in a
        shared store (pnpm): reading it may leak a secret, writing it changes that file."""
        return not self.contains(resolved) or _hard_link_count(resolved) > 1

    def resolve(self, path: str | os.PathLike[str], *, allow_outside: bool = False) -> Path:
        resolved = self.absolute(path)
        if not allow_outside and self.outside(resolved):
            raise OutsideWorkspace(os.fspath(path), resolved, self.roots, links=_hard_link_count(resolved))
        return resolved

    def display(self, path: Path) -> str:
        """A short path for titles: relative to cwd when inside it."""
        try:
            return str(path.relative_to(self.cwd))
        except ValueError:
            return str(path)


def _hard_link_count(resolved: Path) -> int:
    """How many names the regular file has; 1 for anything else (directories always have
    several, a file about to be created has none yet)."""
    try:
        status = os.stat(resolved)
    except (OSError, ValueError):
        return 1
    return status.st_nlink if stat.S_ISREG(status.st_mode) else 1


@dataclass(frozen=True, slots=True)
class CommandExit:
    exit_code: int | None
    signal: str | None = None


class RunningCommand(Protocol):
    """A command started in the workspace."""

    terminal_id: str | None  # set when an editor terminal shows it live

    def stream(self) -> AsyncIterator[str]:
        """Output chunks as they arrive, ending when the process exits (may yield nothing
        when the editor shows the output itself)."""
        ...

    async def wait(self) -> CommandExit: ...

    async def output(self) -> tuple[str, bool]:
        """All output so far (capped at the output limit, tail kept) and whether it was cut."""
        ...

    async def kill(self) -> None: ...

    async def release(self) -> None:
        """Free what the command holds (an editor terminal); kills it if still running."""
        ...


class Workspace(Protocol):
    scope: WorkspaceScope

    async def read_text(self, path: Path) -> str:
        """The file's text (the editor's unsaved buffer where there is one).

        Raises FileNotFoundError, BinaryFile, FileTooLarge or WorkspaceError.
        """
        ...

    async def write_text(self, path: Path, content: str) -> None: ...

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = 64_000,
        unconfined: bool = False,  # outside the sandbox: only after the user approved it
    ) -> RunningCommand: ...


# --- the local implementation ------------------------------------------------------

_BINARY_SNIFF_BYTES = 8192
# After the shell exits, how long to wait for the pipe to close. Children it left
# behind (`server &`) keep the pipe open; the command counts as finished anyway.
_DRAIN_AFTER_EXIT = 0.25
_SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value:.1f} TB"


class LocalWorkspace:
    """The workspace on the local disk, with commands run as local subprocesses."""

    def __init__(
        self,
        scope: WorkspaceScope,
        *,
        max_read_bytes: int = 2_000_000,
        kill_grace: float = 2.0,
        sandbox: Sandbox | None = None,  # None: commands run unconfined (library and unit use)
    ) -> None:
        self.scope = scope
        self.max_read_bytes = max_read_bytes
        self.kill_grace = kill_grace  # seconds between SIGTERM and SIGKILL
        self.sandbox = sandbox

    async def read_text(self, path: Path) -> str:
        return await asyncio.to_thread(self._read_text, Path(path))

    def _read_text(self, path: Path) -> str:
        with path.open("rb") as handle:  # IsADirectoryError / FileNotFoundError surface as-is
            size = os.fstat(handle.fileno()).st_size
            if size > self.max_read_bytes:
                raise FileTooLarge(
                    f"{path} is {human_size(size)}, larger than the {human_size(self.max_read_bytes)} "
                    "read limit. Use search to find the lines you need, or read a slice with offset "
                    "and limit where the reader supports it (or `sed -n '100,200p'` in the terminal)."
                )
            data = handle.read()
        if b"\0" in data[:_BINARY_SNIFF_BYTES]:
            raise BinaryFile(f"{path} is a binary file ({human_size(len(data))}); it has no text to read.")
        # Stray non-UTF-8 bytes in a text file (Latin-1 comments) should not make it unreadable.
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, content: str) -> None:
        await asyncio.to_thread(self._write_text, Path(path), content)

    def _write_text(self, path: Path, content: str) -> None:
        target = Path(os.path.realpath(path))  # replace the file a symlink points to, not the link
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        # 0o666 lets the umask decide a new file's mode, as for any editor save.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8"))
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = 64_000,
        unconfined: bool = False,
    ) -> LocalCommand:
        directory = Path(cwd) if cwd is not None else self.scope.cwd
        full_env = {**os.environ, **(env or {})}
        argv = [_SHELL, "-c", command]
        sandbox = self.sandbox
        confined = sandbox is not None and not unconfined and sandbox.confinement != "off"
        if confined:
            assert sandbox is not None
            if sandbox.confinement == "unavailable":
                # The policy asks before every command when the sandbox cannot start, and an
                # approval arrives here as `unconfined`; anything else fails closed.
                raise WorkspaceError(f"the sandbox cannot start ({sandbox.availability.reason})")
            argv = sandbox.wrap(argv, cwd=directory.resolve())
            full_env = sandbox.environment(full_env)
        loop = asyncio.get_running_loop()
        run = LocalCommand(output_limit=output_limit, kill_grace=self.kill_grace)
        run.sandbox = sandbox if confined else None
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _CommandProtocol(run),
                *argv,
                cwd=directory,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so kill() reaches its children
            )
        except OSError as exc:
            raise WorkspaceError(f"cannot start the command in {directory}: {exc}") from exc
        run._attach(transport)
        if not confined:
            # bwrap dies with the agent (--die-with-parent); an unconfined command needs a guard.
            from core.sandbox import UnconfinedGuard

            run._guard = UnconfinedGuard(transport.get_pid())
        return run


class _CommandProtocol(asyncio.SubprocessProtocol):
    def __init__(self, run: LocalCommand) -> None:
        self._run = run

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self._run._on_data(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._run._on_eof()

    def process_exited(self) -> None:
        self._run._on_exit()


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
        self._transport: asyncio.SubprocessTransport | None = None
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

    def _attach(self, transport: asyncio.SubprocessTransport) -> None:
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
        if self._eof:
            self._finish()
        else:
            self._drain_timer = asyncio.get_running_loop().call_later(_DRAIN_AFTER_EXIT, self._finish)

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
