"""Fixtures most test modules share. A module that needs another scope defines its own.

The end-to-end family: one real `hermes-acp --stdio` per test module (`server`), spawned
against the module's scripted provider (`fake`) with its home in `server_home`, and per test
an SDK client re-initialized with the module's capabilities (`client`), the raw pipes
(`raw`), or a fresh session in an empty project (`session`). Every test ends with the wire
checked against the schema. A module says how its server differs in a constant
`SERVER_SETUP = ServerSetup(...)`; a test that needs a server of its own uses the harness's
`connected(env, capabilities)` (or `spawn_server` when it drives start-up itself), its HOME
the `home` fixture.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.support.acp_harness import AcpClient, ServerProcess, server_env, spawn_server
from tests.support.fake_provider import FakeProvider
from tests.support.homes import user_home
from tests.support.kill_guard import install as guard_against_broadcast_kills
from tests.support.server_setup import ServerSetup, write_config
from tests.support.warm_servers import stop_servers

# A spawn whose environment comes from this process's starts no warm server either (the
# harness's server_env says the same; tests/test_e2e_warm_fork.py turns it on for itself).
os.environ["HERMES_ACP_WARM"] = "0"
guard_against_broadcast_kills()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    """The scripted provider server, one per test module (each test scripts its replies)."""
    with FakeProvider() as provider:
        yield provider


@pytest_asyncio.fixture
async def agent_test(fake: FakeProvider) -> AsyncIterator[None]:
    """For tests that build agents on the module's fake: the test starts with no script and
    no recorded requests, and the agents it built are closed after it."""
    fake.forget()
    yield
    from tests.support.agents import close_open_agents  # core's modules only where agents are built

    await close_open_agents()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory: the session's cwd."""
    path = tmp_path / "project"
    path.mkdir()
    return path


# -- the end-to-end server -----------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty HOME for a server the test starts itself (the module's server has `server_home`)."""
    return user_home(tmp_path)


@pytest.fixture(scope="module")
def server_setup(request: pytest.FixtureRequest) -> ServerSetup:
    """The module's `SERVER_SETUP`, if it has one."""
    return getattr(request.module, "SERVER_SETUP", ServerSetup())


@pytest.fixture(scope="module")
def server_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HOME of the module's server (its store lives below it)."""
    return tmp_path_factory.mktemp("home")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(
    server_setup: ServerSetup, server_home: Path, fake: FakeProvider
) -> AsyncIterator[ServerProcess]:
    """The module's server process; not yet initialized."""
    env = server_env(server_home, fake, **server_setup.settings)
    if server_setup.config_toml:
        write_config(env, server_setup.config_toml)
    if server_setup.prepare_home is not None:
        server_setup.prepare_home(server_home)
    async with spawn_server(env) as process:
        if server_setup.sdk_client:
            process.sdk_client(dict(server_setup.capabilities))
        yield process


@pytest.fixture
def client_capabilities(server_setup: ServerSetup) -> dict[str, Any]:
    """What the client advertises in this test (a module parametrizes it to run as several editors)."""
    return dict(server_setup.capabilities)


@pytest_asyncio.fixture(loop_scope="module")
async def client(
    server: ServerProcess, fake: FakeProvider, client_capabilities: dict[str, Any]
) -> AsyncIterator[AcpClient]:
    """The module's SDK client, initialized afresh: whatever a test changed (capabilities, the
    permission answer) does not leak into the next."""
    assert server.client is not None, "this module's SERVER_SETUP has no SDK client"
    client = server.client
    client.capabilities = client_capabilities
    client.permission = "allow_once"
    await client.initialize()
    yield client
    server.assert_clean()
    fake.script([])


@pytest.fixture
def raw(server: ServerProcess) -> Iterator[ServerProcess]:
    """The module's server spoken to line by line; its wire checked after the test."""
    yield server
    server.assert_clean()


@pytest_asyncio.fixture(loop_scope="module")
async def session(client: AcpClient, project: Path) -> str:
    """A new session in an empty project."""
    return (await client.new_session(project))["sessionId"]


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Path]:
    """A private `XDG_RUNTIME_DIR` for the warm start's tests (its servers listen there),
    with every server started in it stopped after the test."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    yield folder
    await stop_servers(f"XDG_RUNTIME_DIR={folder}")
