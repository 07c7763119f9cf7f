"""The command line: --version, --check, setup, --trace, --log-file."""

from __future__ import annotations

import json
import socket
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_acp import __version__
from tests.support.acp_harness import run_hermes as run
from tests.support.acp_harness import server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        provider.models = ["gpt-4.1", "gpt-4.1-mini"]
        yield provider


def test_version(tmp_path: Path) -> None:
    result = run(server_env(tmp_path), "--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"hermes-acp {__version__}"


def test_check_passes_against_a_working_endpoint(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script([Reply(text="OK")])
    result = run(server_env(tmp_path, fake), "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ok  ] credentials: present" in result.stdout
    assert "reachable (2 models listed)" in result.stdout
    assert "gpt-4.1 answered" in result.stdout
    body = fake.requests[-1].body
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 1  # a one-token request


def test_check_fails_without_a_key(tmp_path: Path) -> None:
    result = run(server_env(tmp_path), "--check")
    assert result.returncode == 1
    assert "[FAIL] credentials" in result.stdout
    assert "hermes-acp setup" in result.stdout


def test_check_fails_when_the_endpoint_is_unreachable(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = server_env(tmp_path, OPENAI_API_KEY="k", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    env["HERMES_ACP_MAX_RETRIES"] = "0"
    result = run(env, "--check")
    assert result.returncode == 1
    assert "[FAIL] endpoint: unreachable" in result.stdout


def test_check_reports_a_broken_config(tmp_path: Path) -> None:
    env = server_env(tmp_path)
    home = Path(env["HERMES_ACP_HOME"])
    home.mkdir(parents=True)
    (home / "config.toml").write_text("modle = 'typo'\n")
    result = run(env, "--check")
    assert result.returncode == 1
    assert "modle" in result.stdout


def test_setup_writes_a_config_that_check_accepts(fake: FakeProvider, tmp_path: Path) -> None:
    env = {**server_env(tmp_path), "OPENAI_BASE_URL": fake.openai_base_url}
    answers = "openai\nsk-test-key\ngpt-4.1-mini\n"
    result = run(env, "setup", stdin=answers)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # prompts go to stderr
    config_path = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    config = tomllib.loads(config_path.read_text())
    assert config == {"provider": "openai", "openai_api_key": "sk-test-key", "model": "gpt-4.1-mini"}
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    fake.script([Reply(text="OK")])
    checked = run(env, "--check")
    assert checked.returncode == 0, checked.stdout


def test_setup_offers_the_models_the_endpoint_lists(fake: FakeProvider, tmp_path: Path) -> None:
    env = server_env(tmp_path)
    result = run(env, "setup", stdin=f"custom\n{fake.openai_base_url}\nsk-custom\n2\n")
    assert result.returncode == 0, result.stderr
    assert "The endpoint lists 2 models:\n    1. gpt-4.1\n    2. gpt-4.1-mini\n" in result.stderr
    assert "Model (a number or a name) [gpt-4.1]: " in result.stderr
    config = tomllib.loads((Path(env["HERMES_ACP_HOME"]) / "config.toml").read_text())
    assert config["model"] == "gpt-4.1-mini"  # picked by its number


def test_setup_keeps_what_it_is_not_asked_to_change(tmp_path: Path) -> None:
    with socket.socket() as probe:  # an endpoint nobody answers: no model list to offer
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**server_env(tmp_path), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
    home = Path(env["HERMES_ACP_HOME"])
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        'provider = "anthropic"\nanthropic_api_key = "old"\nmax_iterations = 7\n'
    )
    result = run(env, "setup", stdin="\n\n\n")  # accept every default
    assert result.returncode == 0, result.stderr
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["anthropic_api_key"] == "old"
    assert config["max_iterations"] == 7
    assert config["model"] == "claude-sonnet-4-5"


def test_logout_removes_the_stored_key_and_check_says_so(fake: FakeProvider, tmp_path: Path) -> None:
    env = server_env(tmp_path)
    answers = f"custom\n{fake.openai_base_url}\nsk-custom\ngpt-4.1\n"
    assert run(env, "setup", stdin=answers).returncode == 0
    fake.script([Reply(text="OK")])
    assert "[ok  ] credentials: present" in run(env, "--check").stdout
    result = run({**env, "OPENAI_API_KEY": "sk-env"}, "logout")
    assert result.returncode == 0, result.stderr
    config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    assert f"Removed api_key from {config}." in result.stderr
    assert "Still set in the environment (unset them to log out fully): OPENAI_API_KEY" in result.stderr
    assert tomllib.loads(config.read_text()) == {
        "provider": "custom",
        "base_url": fake.openai_base_url,
        "model": "gpt-4.1",
    }
    fake.script([Reply(text="OK")])
    checked = run(env, "--check").stdout
    assert "credentials: present" not in checked
    assert f"[--  ] credentials: no API key; {fake.openai_base_url} is called without one" in checked
    again = run(env, "logout")
    assert again.returncode == 0 and "nothing to remove" in again.stderr


def test_setup_stops_cleanly_when_input_ends(tmp_path: Path) -> None:
    env = server_env(tmp_path)
    result = run(env, "setup", stdin="openai\n")
    assert result.returncode == 1
    assert "aborted" in result.stderr
    assert not (Path(env["HERMES_ACP_HOME"]) / "config.toml").exists()


@pytest.mark.asyncio
async def test_trace_and_log_file_record_the_session(fake: FakeProvider, tmp_path: Path) -> None:
    trace, log = tmp_path / "wire.jsonl", tmp_path / "logs" / "hermes.log"
    env = server_env(tmp_path, fake)
    async with spawn_server(
        env, args=("--trace", str(trace), "--log-file", str(log), "--log-level", "info")
    ) as server:
        await server.send_line(b"this is not json")
        await server.next_message()
        await server.request(1, "initialize", {"protocolVersion": 1})
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(entry["dir"], entry["msg"].get("id", entry["msg"].get("unparsed"))) for entry in lines] == [
        ("in", "this is not json"),
        ("out", None),
        ("in", 1),
        ("out", 1),
    ]
    assert "initialize from an unnamed client" in log.read_text()
