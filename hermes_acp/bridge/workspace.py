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
import os
from collections.abc import AsyncIterator
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Unpack

from acp.exceptions import RequestError

from hermes_acp.bridge.channel import ClientChannel
from hermes_core.execution.processes import OUTPUT_LIMIT, confining
from hermes_core.workspace import (
    CommandExit,
    CommandOptions,
    RunningCommand,
    Workspace,
    WorkspaceError,
    WorkspaceScope,
    check_readable,
    check_size,
    opened_identity,
)

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.workspace import Found, Listing

log = logging.getLogger(__name__)

_RESOURCE_NOT_FOUND = -32002
_ATTEMPTS = 3  # reads of a file that keeps changing identity before giving up

# Releases that outlive a cancelled caller; held here so they are not garbage-collected.
_background: set[asyncio.Task[Any]] = set()


@dataclass(slots=True)
class ClientWorkspace:
    """The editor's side of the Workspace port where it offers it (`read`, `write`,
    `terminal`); `local` does the rest."""

    scope: WorkspaceScope
    channel: ClientChannel
    session_id: str
    _: KW_ONLY
    read: bool
    write: bool
    terminal: bool
    local: Workspace

    @property
    def max_read_bytes(self) -> int:
        return self.local.max_read_bytes  # one limit, whoever reads the file

    @property
    def sandbox(self) -> Sandbox | None:
        """The sandbox commands run in, local or in an editor terminal: the local one."""
        return self.local.sandbox

    # The editor offers no bytes, listing or search: those are read from disk, by the same rules.

    async def read_bytes(
        self, path: str | os.PathLike[str], limit: int, *, allow_outside: bool = False
    ) -> bytes:
        return await self.local.read_bytes(path, limit, allow_outside=allow_outside)

    async def list_files(self, path: str, *, glob: str | None = None, allow_outside: bool = False) -> Listing:
        return await self.local.list_files(path, glob=glob, allow_outside=allow_outside)

    async def search(
        self,
        path: str,
        pattern: str,
        *,
        glob: str | None = None,
        case_sensitive: bool | None = None,
        allow_outside: bool = False,
    ) -> Found:
        return await self.local.search(
            path, pattern, glob=glob, case_sensitive=case_sensitive, allow_outside=allow_outside
        )

    async def read_text(self, path: str | os.PathLike[str], *, allow_outside: bool = False) -> str:
        if not self.read:
            return await self.local.read_text(path, allow_outside=allow_outside)
        # The editor follows whatever the path names when it reads, so the path is judged
        # by the workspace's rules (beneath a root, a regular text file) before and after,
        # and must still be the same file afterwards: a rename or a new link in between
        # changes its change time. What is there is judged on disk: the editor can only
        # hand over text.
        for _ in range(_ATTEMPTS):
            before = await asyncio.to_thread(self._judged, path, allow_outside)
            content = await self._editor_read(path, exists=before is not None)
            if await asyncio.to_thread(self._identity, path, allow_outside) == before:
                return content
        raise WorkspaceError(
            f"{os.fspath(path)!r} kept changing while the editor read it (renamed or relinked "
            f"{_ATTEMPTS} times); its text was not used"
        )

    def _judged(self, path: str | os.PathLike[str], allow_outside: bool) -> tuple[int, ...] | None:
        if not check_readable(self.scope, path, self.max_read_bytes, allow_outside=allow_outside):
            return None
        return self._identity(path, allow_outside)

    def _identity(self, path: str | os.PathLike[str], allow_outside: bool) -> tuple[int, ...] | None:
        return opened_identity(self.scope, path, allow_outside=allow_outside)

    async def _editor_read(self, path: str | os.PathLike[str], *, exists: bool) -> str:
        absolute = self.scope.absolute(path)
        try:
            result = await self.channel.send_request(
                "fs/read_text_file", {"sessionId": self.session_id, "path": str(absolute)}
            )
        except RequestError as exc:
            if not exists or exc.code == _RESOURCE_NOT_FOUND:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(absolute)) from exc
            raise WorkspaceError(f"the editor could not read {absolute}: {_describe(exc)}") from exc
        except ConnectionError as exc:
            raise WorkspaceError(f"the editor could not read {absolute}: {exc}") from exc
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise WorkspaceError(f"the editor answered fs/read_text_file for {absolute} without text")
        if len(content) > self.max_read_bytes:  # characters: a cheap bound before encoding
            check_size(absolute, len(content.encode()), self.max_read_bytes)
        return content

    async def write_text(
        self, path: str | os.PathLike[str], content: str, *, allow_outside: bool = False
    ) -> None:
        if not self.write:
            await self.local.write_text(path, content, allow_outside=allow_outside)
            return
        # Before: the parent directories are made beneath a root, and what the name holds
        # now is judged (a regular file with one name, or nothing). After: the name must
        # still open beneath a root. A link swapped in between may have let the editor
        # write elsewhere; that is then said, loudly, rather than reported as done.
        await asyncio.to_thread(self._judged_for_write, path, allow_outside)
        absolute = self.scope.absolute(path)
        params = {"sessionId": self.session_id, "path": str(absolute), "content": content}
        try:
            await self.channel.send_request("fs/write_text_file", params)
        except (RequestError, ConnectionError) as exc:
            raise WorkspaceError(f"the editor could not write {absolute}: {_describe(exc)}") from exc
        if self.sandbox is not None:  # the agent's own write: not a running command's plant
            self.sandbox.accept_written(absolute)
        try:
            await asyncio.to_thread(self._identity, path, allow_outside)
        except (OSError, WorkspaceError) as exc:
            raise WorkspaceError(
                f"{os.fspath(path)!r} moved while the editor wrote it, and the editor may have "
                f"written somewhere else: {exc}"
            ) from exc

    def _judged_for_write(self, path: str | os.PathLike[str], allow_outside: bool) -> None:
        directory, _, _ = self.scope.open_for_replace(path, allow_outside=allow_outside)
        os.close(directory)

    async def start_command(self, command: str, **options: Unpack[CommandOptions]) -> RunningCommand:
        if not self.terminal:
            return await self.local.start_command(command, **options)
        cwd, env = options.get("cwd"), options.get("env")
        directory = self.scope.absolute(cwd) if cwd is not None else self.scope.cwd
        # bash -c runs the line as the model wrote it (pipes, &&, quotes) in every editor.
        argv = ["bash", "-c", command]
        sandbox = confining(self.sandbox, options)
        if sandbox is not None:
            # The editor runs the sandbox launcher, so its terminal is confined like a local
            # command; a short script of ours holds the bwrap launch, so the editor's title
            # and first line show the command line, not bwrap's arguments.
            from hermes_core.sandbox.launcher import LAUNCHERS

            wrapped = sandbox.wrap(argv, cwd=directory, new_session=True)
            try:
                argv = LAUNCHERS.presentable(wrapped, command)
            except BaseException:
                sandbox.after_command()  # wrapped, never run
                raise
        params: dict[str, Any] = {
            "sessionId": self.session_id,
            "command": argv[0],
            "args": argv[1:],
            "cwd": str(directory),
            "outputByteLimit": max(0, options.get("output_limit", OUTPUT_LIMIT)),
            # The command line as the model wrote it, for a client that shows it (a header,
            # a title) whatever launch runs it.
            "_meta": {"hermes": {"command": command}},
        }
        if env:
            params["env"] = [{"name": name, "value": value} for name, value in env.items()]
        creating = asyncio.ensure_future(self.channel.send_request("terminal/create", params))
        try:
            result = await asyncio.shield(creating)
        except (RequestError, ConnectionError) as exc:
            if sandbox is not None:
                sandbox.after_command()  # the editor started nothing: no longer counted as running
            raise WorkspaceError(f"the editor could not start `{command}`: {_describe(exc)}") from exc
        except asyncio.CancelledError:
            # The editor may already be running it: once it answers, stop and free that terminal.
            creating.add_done_callback(lambda done: self._abandon_terminal(done, sandbox))
            raise
        terminal_id = _terminal_id(result)
        if terminal_id is None:
            raise WorkspaceError("the editor answered terminal/create without a terminalId")
        run = ClientCommand(self.channel, self.session_id, terminal_id)
        run.sandbox = sandbox
        return run

    def _abandon_terminal(self, creating: asyncio.Future[Any], sandbox: Sandbox | None) -> None:
        if creating.cancelled() or creating.exception() is not None:
            if sandbox is not None:
                sandbox.after_command()  # wrapped, never run
            return
        terminal_id = _terminal_id(creating.result())
        if terminal_id is not None:
            orphan = ClientCommand(self.channel, self.session_id, terminal_id)
            orphan.sandbox = sandbox
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
        self._ended = False

    def _command_ended(self) -> None:
        """Once, when the editor says the command exited or the terminal is released (the
        editor ends it then): the sandbox's clean-up after a command, as for a local one
        (a planted `.git/commondir` moved aside, bwrap's empty mount points removed)."""
        if not self._ended:
            self._ended = True
            if self.sandbox is not None:
                self.sandbox.after_command()

    async def stream(self) -> AsyncIterator[str]:
        return
        yield  # an async generator that ends at once

    async def wait(self) -> CommandExit:
        if self._exit is not None:
            return self._exit
        result = await self._call("terminal/wait_for_exit")
        self._exit = CommandExit(result.get("exitCode"), result.get("signal"))
        self._command_ended()
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
            self._command_ended()
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
        self._command_ended()

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


def _terminal_id(result: Any) -> str | None:
    terminal_id = result.get("terminalId") if isinstance(result, dict) else None
    return terminal_id if isinstance(terminal_id, str) and terminal_id else None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        detail = exc.data.get("details") if isinstance(exc.data, dict) else exc.data
        return f"{exc} ({detail})" if detail else str(exc)
    return str(exc)


if TYPE_CHECKING:

    def _is_a_workspace(workspace: ClientWorkspace) -> Workspace:
        return workspace  # the type checker holds ClientWorkspace to the port here
