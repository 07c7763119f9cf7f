"""Who a warm server serves (hermes_acp/warm/peer.py, stub.py), end to end: a forked child
runs in the server's process context, so a spawn whose context differs must either get its
own back in the child (limits, priority) or run cold (a jail, a stopped server)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
import sys
from pathlib import Path

from tests.support.fake_provider import FakeProvider, Reply
from tests.support.processes import wait_gone
from tests.support.tool_turns import commands, tool_results
from tests.support.waiting import until
from tests.support.warm_servers import (
    editor,
    one_server,
    parent,
    served_by,
    warm_env,
    warm_server,
)

HERMES = (sys.executable, "-m", "hermes_acp", "--stdio")


async def test_a_spawn_kept_offline_in_a_network_namespace_is_not_served_from_outside_it(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # `unshare -rn` is how one keeps an agent offline: same files, same environment (so the
    # same key), same mount namespace, but no network. A child of the server outside would
    # have the server's network.
    env = warm_env(home, fake, runtime, HERMES_ACP_MAX_RETRIES="0")
    server = await warm_server(env, project)
    fake.script([Reply(text="reached from the jail")])
    async with editor(env, project, command=("unshare", "-rn", *HERMES), check_exit=False) as (stub, client):
        child = served_by(stub.process)
        assert child is None or parent(child) != server
        sid = (await client.new_session(project))["sessionId"]
        with contextlib.suppress(Exception):  # the model is unreachable from in there
            await client.prompt(sid, "hello?")
    assert fake.requests == [], "a jailed spawn reached the network"


async def test_a_spawn_started_nicer_on_fewer_cpus_and_with_lower_limits_keeps_them_when_warm(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    restricted = ("taskset", "-c", "0", "nice", "-n", "7", "prlimit", "--nofile=345:345", "--", *HERMES)
    fake.script(commands("ulimit -n; nice"))
    async with editor(env, project, command=restricted) as (stub, client):
        child = served_by(stub.process)
        assert child is not None and parent(child) == server  # served warm, not cold
        assert os.sched_getaffinity(child) == {0}
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "limits?") == {"stopReason": "end_turn"}
    [result] = tool_results(fake)
    assert "345\n7" in result, result  # the agent's commands live under the user's limits


async def test_a_server_that_cannot_grant_a_spawn_its_limits_retires_for_one_that_can(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    async with editor(env, project, command=("prlimit", "--nofile=300:300", "--", *HERMES)) as (_, client):
        await client.new_session(project)  # this cold start launches a server under its limit
    tight = await one_server(f"XDG_RUNTIME_DIR={runtime}")
    async with editor(env, project) as (stub, client):
        child = served_by(stub.process)
        assert child is None or parent(child) != tight  # no child can raise a hard limit
        await client.new_session(project)
    await wait_gone(tight, "the server that could not serve")
    roomy = await one_server(f"XDG_RUNTIME_DIR={runtime}")
    async with editor(env, project) as (stub, _):
        child = served_by(stub.process)
        assert child is not None and parent(child) == roomy
        assert os.getpriority(os.PRIO_PROCESS, child) == os.getpriority(os.PRIO_PROCESS, 0)


async def test_spawns_queued_on_a_stopped_server_run_cold_instead_of_hanging(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # More spawns than a server's listen queue holds, while it cannot accept (stopped here;
    # stuck in general): each must still answer its editor, cold.
    env = warm_env(home, fake, runtime, HERMES_ACP_WARM_WAIT="0.3")
    server = await warm_server(env, project)
    os.kill(server, signal.SIGSTOP)
    try:

        async def one() -> None:
            async with editor(env, project) as (stub, _):
                assert served_by(stub.process) is None

        await asyncio.gather(*(one() for _ in range(24)))
    finally:
        os.kill(server, signal.SIGCONT)


async def test_a_peer_that_trickles_its_header_is_dropped_and_spawns_are_served_again(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # A process of the user's (not a sandboxed one: it cannot reach the socket) that sends
    # a byte now and then holds the single-threaded server; it must be cut off whole.
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    log = Path(env["HERMES_ACP_HOME"]) / "warm-server.log"
    drops = log.read_text().count("dropped a connection")
    [sock] = (runtime / "hermes-acp").glob("*.sock")
    folder = os.open(sock.parent, os.O_RDONLY | os.O_DIRECTORY)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(f"/proc/self/fd/{folder}/{sock.name}")  # past the 108-byte limit
    finally:
        os.close(folder)
    reader, writer = await asyncio.open_unix_connection(sock=connection)
    await reader.readexactly(5)  # the server's ready
    writer.write(struct.pack("!I", 1000) + b"{")

    async def trickle() -> None:
        while True:
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.5)  # the attacker's pace, not a wait

    task = asyncio.create_task(trickle())
    try:
        await until(lambda: log.read_text().count("dropped a connection") > drops, "the slow peer's drop")
        async with editor(env, project) as (stub, _):
            child = served_by(stub.process)
            assert child is not None and parent(child) == server
    finally:
        task.cancel()
        writer.close()


async def test_a_spawn_with_other_interpreter_options_is_not_served_by_a_server_without_them(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # `python -O` drops the asserts, `-X dev` turns warnings on: a child of a server
    # started without them would run without them.
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    for options in (("-O",), ("-X", "dev")):
        async with editor(env, project, command=(sys.executable, *options, *HERMES[1:])) as (stub, _):
            child = served_by(stub.process)
            assert child is None or parent(child) != server, options


def ignored_signals(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)


async def test_signals_the_editor_ignored_stay_ignored_in_the_warm_child(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # A background job of a script (`hermes-acp --stdio < requests &`) starts with SIGINT
    # and SIGQUIT ignored, and so do the commands a cold agent runs: Ctrl-C in that
    # terminal does not reach them.
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    shell = ("sh", "-c", f"trap '' INT QUIT; exec {' '.join(HERMES)}")
    interrupt_and_quit = 1 << (signal.SIGINT - 1) | 1 << (signal.SIGQUIT - 1)
    fake.script(commands("grep SigIgn /proc/self/status"))
    async with editor(env, project, command=shell) as (stub, client):
        child = served_by(stub.process)
        assert child is not None and parent(child) == server
        assert ignored_signals(child) & interrupt_and_quit == interrupt_and_quit
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "signals?") == {"stopReason": "end_turn"}
    [result] = tool_results(fake)
    ignored = int(result.split("SigIgn:")[1].split()[0], 16)
    assert ignored & interrupt_and_quit == interrupt_and_quit, result


def own_cgroup(name: str) -> tuple[Path, str]:
    """A new cgroup (v1 `pids` where mounted, else the v2 hierarchy): its folder, and its
    line's key in /proc/PID/cgroup."""
    for mount, key in ((Path("/sys/fs/cgroup/pids"), "pids"), (Path("/sys/fs/cgroup/unified"), "")):
        if (mount / "cgroup.procs").exists():
            (mount / name).mkdir()
            return mount / name, key
    (Path("/sys/fs/cgroup") / name).mkdir()
    return Path("/sys/fs/cgroup") / name, ""


def cgroup_of(pid: int, key: str) -> str:
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return next(line.split(":", 2)[2] for line in lines if line.split(":", 2)[1] == key)


async def test_a_spawn_confined_to_a_cgroup_of_its_own_is_served_inside_it(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # `systemd-run --user -p MemoryMax=2G hermes-acp`, a pids limit: the user's limit is the
    # cgroup, and a child left in the server's would run the whole session outside it.
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    group, key = own_cgroup(f"warm-start-test-{os.getpid()}-{runtime.parent.name}")
    try:
        shell = ("sh", "-c", f"echo $$ > {group}/cgroup.procs && exec {' '.join(HERMES)}")
        async with editor(env, project, command=shell) as (stub, _):
            child = served_by(stub.process)
            assert child is not None and parent(child) == server
            assert cgroup_of(child, key) == cgroup_of(stub.pid, key) == f"/{group.name}"
        await wait_gone(child, "warm child")
    finally:
        await until(lambda: not (group / "cgroup.procs").read_text().strip(), "the test cgroup to empty")
        group.rmdir()
