"""What a warm child takes over beside limits and nice value (hermes_acp/warm/peer.py):
the stub's I/O priority and OOM adjustment; and a peer that exits after connecting, whose
pid goes to a process outside its jail, is not judged by that process (SO_PEERPIDFD)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.fake_provider import FakeProvider
from tests.support.processes import wait_gone
from tests.support.tool_turns import commands, tool_results
from tests.support.warm_servers import editor, one_server, parent, served_by, warm_env, warm_server

HERMES = (sys.executable, "-m", "hermes_acp", "--stdio")


def oom_score_adj(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


def io_class(pid: int) -> str:
    return subprocess.run(("ionice", "-p", str(pid)), capture_output=True, text=True, check=True).stdout


async def test_a_spawn_started_idle_for_io_and_first_for_the_oom_killer_stays_so_when_warm(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # `ionice -c 3` keeps a background agent's disk work out of the way, and `choom -n 500`
    # makes it the one the OOM killer takes first: a child with the server's would not.
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    assert oom_score_adj(server) != 500 and "idle" not in io_class(server)
    background = ("choom", "-n", "500", "--", "ionice", "-c", "3", *HERMES)
    fake.script(commands("cat /proc/self/oom_score_adj; ionice"))
    async with editor(env, project, command=background) as (stub, client):
        child = served_by(stub.process)
        assert child is not None and parent(child) == server  # served warm, not cold
        assert oom_score_adj(child) == 500
        assert io_class(child).startswith("idle"), io_class(child)
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "priorities?") == {"stopReason": "end_turn"}
    [result] = tool_results(fake)
    assert "500\nidle" in result, result  # the agent's commands inherit them too


async def test_a_server_the_oom_killer_would_take_first_retires_for_a_spawn_it_cannot_match(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # The server started from a spawn of `choom -n 300`; a later spawn of 0 cannot get its
    # value back in a child without CAP_SYS_RESOURCE, so it must not be served at 300.
    env = warm_env(home, fake, runtime)
    async with editor(env, project, command=("choom", "-n", "300", "--", *HERMES)) as (_, client):
        await client.new_session(project)  # this cold start launches a server at 300
    exposed = await one_server(f"XDG_RUNTIME_DIR={runtime}")
    assert oom_score_adj(exposed) == 300
    async with editor(env, project) as (stub, client):
        child = served_by(stub.process)
        assert child is None or parent(child) != exposed
        await client.new_session(project)
    await wait_gone(exposed, "the server that could not serve")
    fitting = await one_server(f"XDG_RUNTIME_DIR={runtime}")
    async with editor(env, project) as (stub, _):
        child = served_by(stub.process)
        assert child is not None and parent(child) == fitting
        assert oom_score_adj(child) == oom_score_adj(stub.pid) == 0


CONNECT_AND_HAND_OVER = """
import os, socket, sys
folder = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(f"/proc/self/fd/{folder}/{sys.argv[2]}")
if os.fork():
    os._exit(0)  # the connecting process goes; its child keeps the connection
got = b""
while len(got) < 5:
    chunk = connection.recv(5 - len(got))
    if not chunk:
        break
    got += chunk
os.write(2, got.hex().encode())
"""


def spawn_with_pid(wanted: int, argv: tuple[str, ...]) -> subprocess.Popen[bytes] | None:
    """A process started with pid `wanted` (as CRIU does: the kernel's next pid is set),
    or None when another process took it first."""
    with open("/proc/sys/kernel/ns_last_pid", "w") as last:
        last.write(str(wanted - 1))
    process = subprocess.Popen(argv)
    if process.pid == wanted:
        return process
    process.kill()
    process.wait()
    return None


def connect_from_a_jail_and_reuse_its_pid(sock: Path, resume: Callable[[], None]) -> str:
    """What the jailed peer's child read from the server (its ready, hex) once the
    connecting process is gone and an unconfined one holds its pid; `resume` lets the
    server go on meanwhile."""
    jailed = subprocess.Popen(
        ("unshare", "-n", sys.executable, "-c", CONNECT_AND_HAND_OVER, str(sock.parent), sock.name),
        stderr=subprocess.PIPE,
    )
    assert jailed.stderr is not None
    jailed.wait()  # the connecting process has exited and is reaped: its pid is free
    reused = None
    while reused is None:  # the machine may take the pid first: try until ours has it
        reused = spawn_with_pid(jailed.pid, ("sleep", "60"))
    try:
        resume()
        return jailed.stderr.read().decode()  # its child's, at the end of the connection
    finally:
        reused.kill()
        reused.wait()
        jailed.stderr.close()


async def test_a_jailed_peer_whose_pid_is_reused_outside_the_jail_after_connecting_is_refused(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # In a network namespace (a jail the server refuses), a process connects and exits at
    # once; its child holds the connection. The pid the server reads from SO_PEERCRED goes
    # to an unconfined process before the server looks at /proc: judged by that one, the
    # jail would be served from outside.
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    [sock] = (runtime / "hermes-acp").glob("*.sock")
    log = Path(env["HERMES_ACP_HOME"]) / "warm-server.log"
    refusals = log.read_text().count("refused a peer")
    os.kill(server, signal.SIGSTOP)  # the connection waits in its queue
    try:
        answer = connect_from_a_jail_and_reuse_its_pid(sock, lambda: os.kill(server, signal.SIGCONT))
    finally:
        os.kill(server, signal.SIGCONT)
    assert answer == "", f"the server answered the jailed peer: {answer}"
    assert log.read_text().count("refused a peer") > refusals
    await _still_serves(env, project, server)


async def _still_serves(env: dict[str, str], project: Path, server: int) -> None:
    async with editor(env, project) as (stub, _):
        child = served_by(stub.process)
        assert child is not None and parent(child) == server
