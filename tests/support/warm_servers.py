"""The warm start's processes, seen from outside (hermes_acp/warm/): its servers, and the
child that serves a stub's editor."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, ServerProcess, server_env, spawn_server
from tests.support.fake_provider import FakeProvider
from tests.support.processes import alive, wait_gone
from tests.support.waiting import until

SERVER_MODULE = b"hermes_acp.warm.serve"
LOCAL = PLAIN_CAPABILITIES | {"terminal": False}  # commands run by the agent, in its sandbox


def warm_env(home: Path, fake: FakeProvider, runtime: Path, **extra: str) -> dict[str, str]:
    return server_env(home, fake, **{"HERMES_ACP_WARM": "1", "XDG_RUNTIME_DIR": str(runtime), **extra})


@asynccontextmanager
async def editor(
    env: dict[str, str], cwd: Path | None = None, **kwargs: Any
) -> AsyncIterator[tuple[ServerProcess, AcpClient]]:
    """A spawn of `hermes-acp --stdio` (a stub when a server runs), initialized."""
    async with spawn_server(env, cwd=cwd, **kwargs) as process:
        client = process.sdk_client(LOCAL, permission="allow_once")
        await client.initialize()
        yield process, client


async def warm_server(env: dict[str, str], project: Path, marker: str | None = None) -> int:
    """A cold spawn that opens a session (and so starts a server); the server's pid."""
    async with editor(env, project) as (_, client):
        await client.new_session(project)
    return await one_server(marker or f"XDG_RUNTIME_DIR={env['XDG_RUNTIME_DIR']}")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def servers(marker: str) -> list[int]:
    """The live warm servers whose environment holds `marker` (e.g. XDG_RUNTIME_DIR=...)."""
    found = []
    wanted = marker.encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or SERVER_MODULE not in _read(entry / "cmdline"):
            continue
        if wanted in _read(entry / "environ") and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def one_server(marker: str) -> int:
    """The one server for `marker`, once it listens (its socket is in its folder)."""
    return await until(lambda: _listening(marker), f"a warm server for {marker} to listen")


def _listening(marker: str) -> int | None:
    found = servers(marker)
    if len(found) != 1:
        return None
    sockets = [n for n in os.listdir(f"/proc/{found[0]}/fd") if _is_socket(f"/proc/{found[0]}/fd/{n}")]
    return found[0] if sockets else None


def _links(process: Path) -> set[str]:
    """Where the process's descriptors point; one closed while it is read is skipped, not
    the whole process (a busy child opens and closes them all the time)."""
    found = set()
    try:
        fds = list((process / "fd").iterdir())
    except OSError:
        return found
    for fd in fds:
        try:
            found.add(os.readlink(fd))
        except OSError:
            continue
    return found


def _is_socket(link: str) -> bool:
    try:
        return os.readlink(link).startswith("socket:")
    except OSError:
        return False


def parent(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise AssertionError(f"no PPid for {pid}")


def served_by(stub: asyncio.subprocess.Process) -> int | None:
    """The process, other than the stub and this one, that holds the stub's stdin pipe:
    the warm child serving it (None: the stub serves itself, cold)."""
    assert stub.stdin is not None
    pipe = f"pipe:[{os.fstat(stub.stdin.get_extra_info('pipe').fileno()).st_ino}]"
    stub_pid = stub.pid
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (stub_pid, os.getpid()):
            continue
        if pipe in _links(entry) and alive(int(entry.name)):
            return int(entry.name)
    return None


async def stop_servers(marker: str) -> None:
    """SIGTERM every server for `marker` (it stops listening and exits once its children
    have) and wait until each has ended."""
    for pid in servers(marker):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        await wait_gone(pid, "warm server")
