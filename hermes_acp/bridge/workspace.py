"""ClientWorkspace: the editor's buffers and terminals, where the editor offers them.

Reads go through `fs/read_text_file` so the agent sees unsaved edits; writes through
`fs/write_text_file` so the editor's buffers stay in step; commands through
`terminal/*` so the user watches them live. Whatever the client did not advertise is
the local workspace's job; an un-advertised method is never called.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

from core.workspace import (
    BinaryFile,
    CommandExit,
    FileTooLarge,
    RunningCommand,
    Workspace,
    WorkspaceError,
    WorkspaceScope,
    human_size,
)
from hermes_acp.bridge.channel import ClientChannel

if TYPE_CHECKING:
    from core.sandbox.bwrap import Sandbox

log = logging.getLogger(__name__)

DEFAULT_MAX_READ_BYTES = 2_000_000
_SNIFF_BYTES = 8192
_RESOURCE_NOT_FOUND = -32002

# Releases that outlive a cancelled caller; held here so they are not garbage-collected.
_background: set[asyncio.Task[Any]] = set()


class ClientWorkspace:
    def __init__(
        self,
        scope: WorkspaceScope,
        channel: ClientChannel,
        session_id: str,
        *,
        read: bool,
        write: bool,
        terminal: bool,
        local: Workspace,
        max_read_bytes: int | None = None,  # default: the local workspace's limit
    ) -> None:
        self.scope = scope
        self.local = local
        self._channel = channel
        self._session_id = session_id
        self._read = read
        self._write = write
        self._terminal = terminal
        if max_read_bytes is None:
            max_read_bytes = getattr(local, "max_read_bytes", DEFAULT_MAX_READ_BYTES)
        self._max_read_bytes = max_read_bytes

    def __getattr__(self, name: str) -> Any:
        # Anything beyond the Workspace port (listing, searching) is local work.
        if name == "local":  # not set yet: fail plainly instead of recursing
            raise AttributeError(name)
        return getattr(self.local, name)

    async def read_text(self, path: Path) -> str:
        if not self._read:
            return await self.local.read_text(path)
        path = self.scope.absolute(path)
        # The editor can only hand over text, so binary and size are judged on disk.
        exists = await asyncio.to_thread(_check_readable, path, self._max_read_bytes)
        try:
            result = await self._channel.send_request(
                "fs/read_text_file", {"sessionId": self._session_id, "path": str(path)}
            )
        except RequestError as exc:
            if not exists or exc.code == _RESOURCE_NOT_FOUND:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path)) from exc
            raise WorkspaceError(f"the editor could not read {path}: {_describe(exc)}") from exc
        except ConnectionError as exc:
            raise WorkspaceError(f"the editor could not read {path}: {exc}") from exc
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise WorkspaceError(f"the editor answered fs/read_text_file for {path} without text")
        if len(content) > self._max_read_bytes and len(content.encode()) > self._max_read_bytes:
            raise FileTooLarge(_too_large(path, len(content.encode()), self._max_read_bytes))
        return content

    async def write_text(self, path: Path, content: str) -> None:
        if not self._write:
            await self.local.write_text(path, content)
            return
        path = self.scope.absolute(path)
        await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        params = {"sessionId": self._session_id, "path": str(path), "content": content}
        try:
            await self._channel.send_request("fs/write_text_file", params)
        except (RequestError, ConnectionError) as exc:
            raise WorkspaceError(f"the editor could not write {path}: {_describe(exc)}") from exc

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = 64_000,
        unconfined: bool = False,
    ) -> RunningCommand:
        if not self._terminal:
            extra = {"unconfined": True} if unconfined else {}
            return await self.local.start_command(
                command, cwd=cwd, env=env, output_limit=output_limit, **extra
            )
        directory = self.scope.absolute(cwd) if cwd is not None else self.scope.cwd
        # bash -c runs the line as the model wrote it (pipes, &&, quotes) in every editor.
        argv = ["bash", "-c", command]
        sandbox = getattr(self.local, "sandbox", None)
        confined = sandbox is not None and not unconfined and sandbox.confinement != "off"
        if confined:
            if sandbox.confinement == "unavailable":
                raise WorkspaceError(f"the sandbox cannot start ({sandbox.availability.reason})")
            # The editor runs the sandbox launcher, so its terminal is confined like a local command.
            argv = sandbox.wrap(argv, cwd=directory, new_session=True)
        params: dict[str, Any] = {
            "sessionId": self._session_id,
            "command": argv[0],
            "args": argv[1:],
            "cwd": str(directory),
            "outputByteLimit": max(0, output_limit),
        }
        if env:
            params["env"] = [{"name": name, "value": value} for name, value in env.items()]
        creating = asyncio.ensure_future(self._channel.send_request("terminal/create", params))
        try:
            result = await asyncio.shield(creating)
        except (RequestError, ConnectionError) as exc:
            raise WorkspaceError(f"the editor could not start `{command}`: {_describe(exc)}") from exc
        except asyncio.CancelledError:
            # The editor may already be running it: once it answers, stop and free that terminal.
            creating.add_done_callback(self._abandon_terminal)
            raise
        terminal_id = _terminal_id(result)
        if terminal_id is None:
            raise WorkspaceError("the editor answered terminal/create without a terminalId")
        run = ClientCommand(self._channel, self._session_id, terminal_id)
        run.sandbox = sandbox if confined else None
        return run

    def _abandon_terminal(self, creating: asyncio.Future[Any]) -> None:
        if creating.cancelled() or creating.exception() is not None:
            return
        terminal_id = _terminal_id(creating.result())
        if terminal_id is not None:
            orphan = ClientCommand(self._channel, self._session_id, terminal_id)
            task = asyncio.ensure_future(orphan.kill_and_release())
            _background.add(task)
            task.add_done_callback(_background.discard)


class ClientCommand:
    """A command running in an editor terminal. Its output lives in the editor: `stream()`
    yields nothing, `output()` asks for it. `release()` frees the terminal, once."""

    def __init__(self, channel: ClientChannel, session_id: str, terminal_id: str) -> None:
        self.terminal_id: str | None = terminal_id
        self.sandbox: Sandbox | None = None  # the sandbox the editor runs it in, if any
        self._id = terminal_id
        self._channel = channel
        self._session_id = session_id
        self._released = False
        self._release_task: asyncio.Task[None] | None = None
        self._last_output: tuple[str, bool] = ("", False)
        self._exit: CommandExit | None = None

    async def stream(self) -> AsyncIterator[str]:
        return
        yield  # an async generator that ends at once

    async def wait(self) -> CommandExit:
        if self._exit is not None:
            return self._exit
        result = await self._call("terminal/wait_for_exit")
        self._exit = CommandExit(result.get("exitCode"), result.get("signal"))
        return self._exit

    async def output(self) -> tuple[str, bool]:
        if self._released:
            return self._last_output
        result = await self._call("terminal/output")
        output = result.get("output")
        self._last_output = (output if isinstance(output, str) else "", bool(result.get("truncated")))
        status = result.get("exitStatus")
        if isinstance(status, dict) and self._exit is None:
            self._exit = CommandExit(status.get("exitCode"), status.get("signal"))
        return self._last_output

    async def kill(self) -> None:
        if self._released:
            return
        try:
            await self._call("terminal/kill")
        except WorkspaceError as exc:
            log.warning("terminal/kill %s failed: %s", self._id, exc)

    async def kill_and_release(self) -> None:
        await self.kill()
        await self.release()

    async def release(self) -> None:
        if self._release_task is None:
            self._released = True
            self._release_task = asyncio.ensure_future(self._send_release())
            _background.add(self._release_task)
            self._release_task.add_done_callback(_background.discard)
        # Shielded: a caller cancelled while releasing still leaves the editor told.
        await asyncio.shield(self._release_task)

    async def _send_release(self) -> None:
        params = {"sessionId": self._session_id, "terminalId": self._id}
        try:
            await self._channel.send_request("terminal/release", params)
        except (RequestError, ConnectionError) as exc:
            log.warning("terminal/release %s failed: %s", self._id, _describe(exc))

    async def _call(self, method: str) -> dict[str, Any]:
        params = {"sessionId": self._session_id, "terminalId": self._id}
        try:
            result = await self._channel.send_request(method, params)
        except (RequestError, ConnectionError) as exc:
            raise WorkspaceError(f"{method} for terminal {self._id} failed: {_describe(exc)}") from exc
        return result if isinstance(result, dict) else {}


def _check_readable(path: Path, max_bytes: int) -> bool:
    """Whether the file exists on disk; raises when it is a directory, binary or too large."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    if size > max_bytes:
        raise FileTooLarge(_too_large(path, size, max_bytes))
    with path.open("rb") as handle:
        if b"\0" in handle.read(_SNIFF_BYTES):
            raise BinaryFile(f"{path} is a binary file")
    return True


def _too_large(path: Path, size: int, limit: int) -> str:
    return (
        f"{path} is {human_size(size)}, larger than the {human_size(limit)} read limit; "
        "search for the lines you need or read it in slices"
    )


def _terminal_id(result: Any) -> str | None:
    terminal_id = result.get("terminalId") if isinstance(result, dict) else None
    return terminal_id if isinstance(terminal_id, str) and terminal_id else None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        detail = exc.data.get("details") if isinstance(exc.data, dict) else exc.data
        return f"{exc} ({detail})" if detail else str(exc)
    return str(exc)
