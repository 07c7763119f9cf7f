"""The warm start (hermes_acp/warm/), end to end: a cold `hermes-acp --stdio` starts a warm
server after its hello; the next spawn's stub hands its stdio, cwd and environment over and
a forked child serves the editor exactly as a cold process would. Each test has its own
runtime dir (so its own servers) and stops them at the end; the harness turns the warm
start off for every other test (HERMES_ACP_WARM=0 in server_env)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.support.fake_provider import FakeProvider, Reply
from tests.support.processes import pids_running, unique_seconds, wait_gone
from tests.support.tool_turns import commands, tool_results
from tests.support.waiting import until
from tests.support.warm_servers import (
    editor,
    one_server,
    parent,
    served_by,
    servers,
    stop_servers,
    warm_env,
    warm_server,
)

ROOT = Path(__file__).resolve().parent.parent


async def test_a_client_that_only_wanted_the_hello_starts_no_server(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    async with editor(env, project):
        pass  # initialize, then the end of input: a probe, a registry's check
    # A server is launched (exec'd) before its launcher goes on: had the probe started one,
    # it would be running now.
    assert servers(f"XDG_RUNTIME_DIR={runtime}") == []
    assert await warm_server(env, project)  # a session: that process starts one


async def test_the_second_spawn_is_a_child_of_the_warm_server_and_serves_a_whole_thread(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    fake.script([Reply(text="first answer")])
    async with editor(env, project) as (stub, client):
        assert served_by(stub.process) is None  # nothing to fork from yet: cold
        first = (await client.new_session(project))["sessionId"]
        assert await client.prompt(first, "hello") == {"stopReason": "end_turn"}
    server = await one_server(f"XDG_RUNTIME_DIR={runtime}")

    async with editor(env, project) as (stub, client):
        child = served_by(stub.process)
        assert child is not None and parent(child) == server != stub.pid
        await client.request("session/load", {"sessionId": first, "cwd": str(project), "mcpServers": []})
        assert "first answer" in client.text(first)  # the history replayed: the store is the same
        sid = (await client.new_session(project))["sessionId"]  # ask mode: a command asks first
        fake.script(commands("echo made-by-the-warm-child > proof.txt"))
        assert await client.prompt(sid, "run it") == {"stopReason": "end_turn"}
        assert len(client.permission_requests) == 1
        assert (project / "proof.txt").read_text() == "made-by-the-warm-child\n"
        fake.script([Reply(text="word " * 400, chunk_size=5, chunk_delay=0.01)])
        prompt = client.start_prompt(sid, "write an essay")
        await client.wait_for(lambda: client.session_updates(sid, "agent_message_chunk"))
        await client.cancel(sid)
        assert await asyncio.wait_for(prompt, 30) == {"stopReason": "cancelled"}
    # editor(): stdin closed, the stub exited 0 (the child's code) and every line was protocol
    await wait_gone(child, "warm child")


async def test_each_spawn_works_in_its_own_cwd_from_one_server(
    fake: FakeProvider, home: Path, tmp_path: Path, runtime: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, one)
    async with editor(env, one) as (first, _), editor(env, two) as (second, _):
        children = [served_by(first.process), served_by(second.process)]
        assert None not in children and {parent(c) for c in children if c} == {server}
        assert [os.readlink(f"/proc/{c}/cwd") for c in children] == [str(one), str(two)]


async def test_another_api_key_or_home_is_not_served_by_the_same_server(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    for other in ({"OPENAI_API_KEY": "another-key"}, {"HERMES_ACP_HOME": str(home / "other-home")}):
        fake.script([Reply(text="ok")])
        async with editor({**env, **other}, project) as (stub, client):
            child = served_by(stub.process)
            assert child is None or parent(child) != server
            sid = (await client.new_session(project))["sessionId"]
            assert await client.prompt(sid, "hi") == {"stopReason": "end_turn"}
        key = other.get("OPENAI_API_KEY", "test")
        assert fake.requests[-1].headers["authorization"] == f"Bearer {key}"


async def test_a_changed_module_is_never_served_by_the_old_server(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    module = ROOT / "hermes_acp" / "server.py"
    os.utime(module)  # an edit, as far as the server can tell: the file's mtime moved
    async with editor(env, project) as (stub, client):
        child = served_by(stub.process)
        assert child is None or parent(child) != server  # cold
        await client.new_session(project)  # a session: this cold process starts a fresh server
    await wait_gone(server, "the stale warm server")
    assert await one_server(f"XDG_RUNTIME_DIR={runtime}") != server


async def test_sigterm_to_the_stub_ends_the_child(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    await warm_server(env, project)
    async with editor(env, project, check_exit=False) as (stub, _):
        child = served_by(stub.process)
        assert child is not None
        stub.process.send_signal(signal.SIGTERM)
        await wait_gone(child, "warm child")
        assert await stub.wait() == 0  # the child's own code after a SIGTERM shutdown


async def test_a_stopped_server_is_waited_for_briefly_then_the_spawn_runs_cold_alone(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    # A server that cannot answer (stopped here; stuck in general) must not hang every
    # spawn. The stub gives up and serves itself; the server, once it runs again, finds the
    # stub gone before it has a descriptor of its editor, and forks nothing.
    env = warm_env(home, fake, runtime, HERMES_ACP_WARM_WAIT="0.3")
    server = await warm_server(env, project)
    log = Path(env["HERMES_ACP_HOME"]) / "warm-server.log"
    forks_before = log.read_text().count("forked ")
    drops_before = log.read_text().count("dropped a connection")
    os.kill(server, signal.SIGSTOP)
    try:
        async with editor(env, project) as (stub, client):
            assert served_by(stub.process) is None  # cold
            sid = (await client.new_session(project))["sessionId"]
            os.kill(server, signal.SIGCONT)
            await until(lambda: log.read_text().count("dropped a connection") > drops_before, "the drop")
            assert log.read_text().count("forked ") == forks_before
            fake.script([Reply(text="answered by the cold process")])
            assert await client.prompt(sid, "still yours?") == {"stopReason": "end_turn"}
            assert "answered by the cold process" in client.text(sid)
    finally:
        os.kill(server, signal.SIGCONT)


async def test_a_child_that_dies_without_its_exit_code_fails_the_stub(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    await warm_server(env, project)
    async with editor(env, project, check_exit=False) as (stub, _):
        child = served_by(stub.process)
        assert child is not None
        os.kill(child, signal.SIGKILL)
        assert await stub.wait() != 0  # the editor sees the agent fail, not a clean end


async def test_a_killed_stub_takes_the_child_and_its_commands_with_it(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    await warm_server(env, project)
    seconds = unique_seconds(300)
    fake.script(commands(f"sleep {seconds}"))
    async with editor(env, project, check_exit=False) as (stub, client):
        child = served_by(stub.process)
        assert child is not None
        sid = await client.session_in_mode(project, "auto")
        client.start_prompt(sid, "wait a while")
        [sleeper] = await client.wait_for(lambda: pids_running("sleep", seconds))
        stub.process.kill()
        await wait_gone(child, "warm child")
        await wait_gone(sleeper, "its command")
        assert await stub.wait() == -signal.SIGKILL


async def test_warm_off_runs_cold_and_starts_no_server(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime, HERMES_ACP_WARM="0")
    fake.script([Reply(text="ok")])
    for _ in range(2):  # and the second spawn is cold too
        async with editor(env, project) as (stub, client):
            assert served_by(stub.process) is None
            sid = (await client.new_session(project))["sessionId"]
            assert await client.prompt(sid, "hi") == {"stopReason": "end_turn"}
    assert servers(f"XDG_RUNTIME_DIR={runtime}") == []
    assert not (runtime / "hermes-acp").exists()


async def test_an_idle_server_exits_on_its_own(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime, HERMES_ACP_WARM_IDLE="1")
    server = await warm_server(env, project)
    await wait_gone(server, "the idle warm server")
    assert list((runtime / "hermes-acp").glob("*.sock")) == []


REACH = """import os, socket, sys
paths = set(sys.argv[1:])
try:
    with open("/proc/net/unix") as table:
        paths |= {line.split()[-1] for line in table.read().splitlines()[1:] if "hermes" in line}
except OSError:
    pass
for top in sys.argv[1:]:
    for folder, _, names in os.walk(os.path.dirname(os.path.dirname(top))):
        paths |= {os.path.join(folder, n) for n in names if n.endswith(".sock")}
for path in sorted(paths):
    s = socket.socket(socket.AF_UNIX)
    try:
        os.chdir(os.path.dirname(path) or "/")  # a relative name: no 108-byte limit in the way
        s.connect(os.path.basename(path))
        print("reached", path)
    except OSError as exc:
        print("refused", path, repr(exc))
print("tried", len(paths))
"""


@pytest.mark.parametrize("where", ["runtime dir", "agent home"])
async def test_a_sandboxed_command_cannot_reach_the_warm_server(
    fake: FakeProvider, home: Path, project: Path, runtime: Path, where: str
) -> None:
    # Both places inside the project, which the sandbox shows: only their hiding keeps them out.
    if where == "runtime dir":
        (project / "run").mkdir(mode=0o700)
        env = warm_env(home, fake, runtime, XDG_RUNTIME_DIR=str(project / "run"))
    else:
        env = warm_env(home, fake, runtime, HERMES_ACP_HOME=str(project / "agent-home"))
        del env["XDG_RUNTIME_DIR"]
    marker = f"HERMES_ACP_HOME={env['HERMES_ACP_HOME']}"
    try:
        await warm_server(env, project, marker)
        [socket_path] = [str(p) for p in project.rglob("*.sock")]
        (project / "reach.py").write_text(REACH)
        fake.script(commands(f"python3 reach.py {socket_path}"))
        async with editor(env, project) as (_, client):
            sid = await client.session_in_mode(project, "auto")
            assert await client.prompt(sid, "look around") == {"stopReason": "end_turn"}
        [result] = tool_results(fake)
        assert f"refused {socket_path}" in result and "reached" not in result, result
    finally:
        await stop_servers(marker)


async def test_a_fifth_server_retires_the_oldest(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    started = []
    for n in range(5):  # five environments, five keys, five servers in one runtime dir
        env = warm_env(home, fake, runtime, HERMES_ACP_TEST_VARIANT=str(n))
        started.append(await warm_server(env, project, f"HERMES_ACP_TEST_VARIANT={n}"))
    await wait_gone(started[0], "the oldest warm server")
    assert sorted(servers(f"XDG_RUNTIME_DIR={runtime}")) == sorted(started[1:])
