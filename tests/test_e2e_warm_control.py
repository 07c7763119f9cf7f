"""The warm start seen and steered by its user (hermes_acp/warm/control.py), and what a
forked child must not keep from its server: `hermes-acp --check` says whether servers
run and how to stop them, `hermes-acp warm stop` stops them, and a child reads the
credentials and config as they are now, not as they were when its server started."""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.support.acp_harness import run_hermes
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.processes import wait_gone
from tests.support.warm_servers import editor, parent, served_by, warm_env, warm_server


async def test_check_names_the_running_server_and_warm_stop_stops_it(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    server = await warm_server(env, project)
    check = run_hermes(env, "--check")
    [line] = [line for line in check.stdout.splitlines() if "warm start" in line]
    assert f"pid {server}" in line and "hermes-acp warm stop" in line, check.stdout
    assert f"pid {server}" in run_hermes(env, "warm", "status").stdout

    stop = run_hermes(env, "warm", "stop")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    await wait_gone(server, "the stopped warm server")
    async with editor(env, project) as (stub, _):
        assert served_by(stub.process) is None  # the next spawn runs cold
    assert "no server running" in run_hermes(env, "--check").stdout


async def test_a_warm_child_reads_the_credentials_as_they_are_after_logout_and_setup(
    fake: FakeProvider, home: Path, project: Path, runtime: Path
) -> None:
    env = warm_env(home, fake, runtime)
    del env["OPENAI_API_KEY"]
    config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('openai_api_key = "first-key"\n')
    server = await warm_server(env, project)

    async def thread() -> list[str]:
        """A new thread, served by the same server; the keys its requests carried."""
        seen = len(fake.requests)
        fake.script([Reply(text="ok")])
        async with editor(env, project) as (stub, client):
            child = served_by(stub.process)
            assert child is not None and parent(child) == server
            with contextlib.suppress(Exception):  # without a key it may be refused
                sid = (await client.new_session(project))["sessionId"]
                await client.prompt(sid, "hi")
        return [r.headers.get("authorization", "") for r in fake.requests[seen:]]

    assert await thread() == ["Bearer first-key"]
    assert run_hermes(env, "logout").returncode == 0
    assert not any("first-key" in sent for sent in await thread())
    config.write_text('openai_api_key = "second-key"\n')  # as `hermes-acp setup` writes it
    assert await thread() == ["Bearer second-key"]
