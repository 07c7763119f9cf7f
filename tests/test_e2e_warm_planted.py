"""What a warm server must not trust or keep (hermes_acp/warm/place.py, serve.py,
fingerprint.py), end to end: a socket folder or log someone planted before it, and
certificates that changed under it."""

from __future__ import annotations

import os
import shutil
import ssl
from pathlib import Path

import pytest

from tests.support.fake_provider import FakeProvider
from tests.support.warm_servers import editor, parent, served_by, servers, warm_env, warm_server


@pytest.mark.parametrize("planted", ["a link to a folder of ours", "a folder others may enter"])
async def test_a_planted_socket_folder_is_never_served_from_nor_started_in(
    fake: FakeProvider, home: Path, project: Path, runtime: Path, tmp_path: Path, planted: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted.startswith("a link"):
        (runtime / "hermes-acp").symlink_to(elsewhere)
    else:
        (runtime / "hermes-acp").mkdir(mode=0o755)
        os.chmod(runtime / "hermes-acp", 0o755)
    env = warm_env(home, fake, runtime)
    for _ in range(2):
        async with editor(env, project) as (stub, client):
            assert served_by(stub.process) is None
            await client.new_session(project)  # a session: would start a server
    assert servers(f"XDG_RUNTIME_DIR={runtime}") == []
    assert list(elsewhere.iterdir()) == [] and list((runtime / "hermes-acp").iterdir()) == []


async def test_the_server_log_is_never_written_through_a_planted_link(
    fake: FakeProvider, home: Path, project: Path, runtime: Path, tmp_path: Path
) -> None:
    env = warm_env(home, fake, runtime)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    agent_home = Path(env["HERMES_ACP_HOME"])
    agent_home.mkdir(parents=True, exist_ok=True)
    (agent_home / "warm-server.log").symlink_to(victim)
    await warm_server(env, project)
    async with editor(env, project) as (stub, _):
        assert served_by(stub.process) is not None  # it serves (and would have logged the fork)
    assert victim.read_text() == "the user's file\n"


async def test_a_changed_certificate_store_is_never_served_by_the_old_server(
    fake: FakeProvider, home: Path, project: Path, runtime: Path, tmp_path: Path
) -> None:
    # An https endpoint: the server makes the TLS context every child shares. A CA removed
    # (distrusted) or added must count in the next thread, as in a fresh process.
    bundle = tmp_path / "ca-bundle.pem"
    shutil.copyfile(ssl.get_default_verify_paths().openssl_cafile, bundle)
    env = warm_env(home, fake, runtime, OPENAI_BASE_URL="https://127.0.0.1:9/v1", SSL_CERT_FILE=str(bundle))
    server = await warm_server(env, project)
    async with editor(env, project) as (stub, _):
        child = served_by(stub.process)
        assert child is not None and parent(child) == server  # the same store: served
    bundle.write_text(
        bundle.read_text().split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n"
    )
    async with editor(env, project) as (stub, _):
        child = served_by(stub.process)
        assert child is None or parent(child) != server
