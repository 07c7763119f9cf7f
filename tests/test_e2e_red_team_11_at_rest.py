"""An eleventh attack round (issue 19's hidden red team): secrets the agent itself writes
down, end to end through the real server with a scripted model.

Every conversation lands in the session store: the key a user pasted into a prompt, each
file and command output the model read. Under the usual umask (022) the agent's home was
made 0755 and `sessions.db` 0644, and `--log-file` / `--trace` (every wire message) 0644:
any other account on the machine (a shared build host, a university server, a container
whose files another uid can see) read them all.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.asyncio(loop_scope="module")

PASTED = "sk-live-pasted-by-the-user-0123456789"


@contextlib.contextmanager
def usual_umask() -> Iterator[None]:
    """The umask most accounts have (the server inherits it when spawned)."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def others_may_read(path: Path) -> bool:
    return bool(stat.S_IMODE(path.stat().st_mode) & 0o077)


async def one_stored_turn(
    fake: FakeProvider, env: dict[str, str], project: Path, args: tuple[str, ...] = ("--stdio",)
) -> None:
    """A server under the usual umask: one session, a prompt holding `PASTED`, a clean end."""
    fake.forget()
    fake.script([Reply(text="Noted.")])
    with usual_umask():
        async with spawn_server(env, args=args) as server:
            client = server.sdk_client(NO_CAPABILITIES)
            await client.initialize()
            session = (await client.new_session(project))["sessionId"]
            assert await client.prompt(session, f"deploy with {PASTED}") == {"stopReason": "end_turn"}
            await server.close_stdin()
            assert await server.wait() == 0


def holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


async def test_the_store_the_log_and_the_trace_are_the_users_alone(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    log_file, trace = logs / "agent.log", logs / "wire.jsonl"
    args = ("--stdio", "--log-file", str(log_file), "--trace", str(trace))
    await one_stored_turn(fake, server_env(home, fake), project, args)
    agent_home = home / ".hermes-acp"
    stored = holding(agent_home, PASTED)
    assert [p.name for p in stored if p.name.startswith("sessions.db")], "the prompt was not stored"
    assert PASTED in trace.read_text()
    assert not others_may_read(agent_home), oct(agent_home.stat().st_mode)
    readable = [p for p in [*stored, *agent_home.glob("sessions.db*"), trace, log_file] if others_may_read(p)]
    assert readable == [], [f"{p}: {oct(p.stat().st_mode)}" for p in readable]


async def test_a_home_an_older_version_left_open_is_closed(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # What earlier versions left: the home 0755, the store (and its WAL) 0644.
    agent_home = home / ".hermes-acp"
    agent_home.mkdir(mode=0o755)
    os.chmod(agent_home, 0o755)
    for name in ("sessions.db", "sessions.db-wal"):
        (agent_home / name).touch()
        os.chmod(agent_home / name, 0o644)
    await one_stored_turn(fake, server_env(home, fake), project)
    open_still = [p for p in [agent_home, *agent_home.glob("sessions.db*")] if others_may_read(p)]
    assert open_still == [], [f"{p}: {oct(p.stat().st_mode)}" for p in open_still]


@pytest.mark.parametrize("where", ["a shared temp folder", "the user's home"])
async def test_a_home_others_need_open_is_left_open(
    fake: FakeProvider, home: Path, project: Path, tmp_path: Path, where: str
) -> None:
    """`HERMES_ACP_HOME=/tmp` (sticky, 1777) or `=~`: closing them would break every other
    program and account that uses them; the store inside is still private."""
    if where == "a shared temp folder":
        agent_home, mode = tmp_path / "shared", 0o1777
        agent_home.mkdir()
    else:
        agent_home, mode = home, 0o755
    os.chmod(agent_home, mode)
    env = server_env(home, fake, HERMES_ACP_HOME=str(agent_home))
    await one_stored_turn(fake, env, project)
    assert stat.S_IMODE(agent_home.stat().st_mode) == mode, oct(agent_home.stat().st_mode)
    assert not others_may_read(agent_home / "sessions.db")
