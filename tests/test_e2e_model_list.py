"""The endpoint's model list: `--check` judges the configured model by it, and a later
run's model picker offers it at once, from the copy kept under the home."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp.exceptions import RequestError

from hermes_acp.terminal import exit_codes
from hermes_core.config import Settings
from hermes_core.providers.model_list import TTL_SECONDS, cached_models, model_problem, remember_models
from tests.support.acp_harness import connected, run_hermes, server_env
from tests.support.fake_provider import FakeProvider, Reply

LISTED = ["gpt-4.1", "gpt-4.1-mini", "fake-extra-model"]


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        provider.models = list(LISTED)
        yield provider


def check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes_acp", "--check"], capture_output=True, text=True, env=env, timeout=60
    )


def test_check_fails_on_a_model_the_endpoint_does_not_list(fake: FakeProvider, tmp_path: Path) -> None:
    result = check(server_env(tmp_path, fake, model="gpt-4.1-minii"))
    assert result.returncode == 1, result.stdout
    assert "[FAIL] model: model 'gpt-4.1-minii' is not among the 3 models the endpoint lists" in result.stdout
    assert fake.requests == []  # no model call for a model that is not there


def test_check_accepts_a_listed_model_and_an_endpoint_without_a_list(
    fake: FakeProvider, tmp_path: Path
) -> None:
    fake.script([Reply(text="OK")])
    assert check(server_env(tmp_path, fake)).returncode == 0
    fake.models = []
    fake.script([Reply(text="OK")])
    unlisted = check(server_env(tmp_path / "other", fake, model="my-local-model"))
    assert unlisted.returncode == 0, unlisted.stdout
    assert "my-local-model answered" in unlisted.stdout


async def test_a_new_session_offers_the_list_an_earlier_run_fetched(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env = server_env(tmp_path, fake)
    fake.script([Reply(text="OK")])
    assert check(env).returncode == 0  # this run fetches and keeps the list
    fake.models = []  # from now on the endpoint lists nothing: only the kept copy has them
    async with connected(env) as (process, client):
        session = await client.new_session(project)
        model = next(o for o in session["configOptions"] if o["id"] == "model")
        offered = [o["value"] for o in model["options"]]
        assert "fake-extra-model" in offered  # in session/new's own answer, no wait
        process.assert_clean()


def test_the_kept_list_expires_and_belongs_to_its_endpoint(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, provider="custom", base_url="http://127.0.0.1:9/v1", api_key="k")
    remember_models(settings, ["a", "b"])
    assert cached_models(settings) == ["a", "b"]
    assert cached_models(settings, now=time.time() + TTL_SECONDS + 1) == []
    other = Settings(home=tmp_path, provider="custom", base_url="http://127.0.0.1:10/v1", api_key="k")
    assert cached_models(other) == []


def test_model_spellings_that_name_a_listed_model_pass() -> None:
    assert model_problem("qwen3", ["qwen3:latest", "llama3:8b"]) is None
    assert model_problem("anything", []) is None
    bedrock = ["anthropic.claude-sonnet-4-20250514-v1:0"]
    assert model_problem("us.anthropic.claude-sonnet-4-20250514-v1:0", bedrock) is None
    assert model_problem("anthropic.claude-sonnet-9-v1:0", bedrock) is not None
    problem = model_problem("gpt-4.1-minii", LISTED)
    assert problem is not None and "3 models" in problem


async def test_a_model_the_endpoint_does_not_list_is_refused_by_set_model_and_the_config_option(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    """acpc sent `session/set_model nope-model` and got `{}`; the first prompt then failed
    far from the choice. Both ways of picking a model refuse it, and say what is listed."""
    async with connected(server_env(tmp_path, fake)) as (process, client):
        sid = (await client.new_session(project))["sessionId"]
        for method, params in (
            ("session/set_model", {"sessionId": sid, "modelId": "nope-model"}),
            ("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "nope-model"}),
        ):
            with pytest.raises(RequestError) as caught:
                await client.request(method, params)
            assert caught.value.code == -32602, method
            assert "'nope-model' is not among the 3 models the endpoint lists" in str(caught.value), method
            assert "fake-extra-model" in caught.value.data["valid"], method
        # /model in the prompt follows the same rule.
        assert await client.prompt(sid, "/model nope-model") == {"stopReason": "end_turn"}
        assert "The model stays `gpt-4.1`: model 'nope-model' is not among" in client.text(sid)
        # A listed one is taken, by either way, though the session did not offer it yet.
        assert (
            await client.request("session/set_model", {"sessionId": sid, "modelId": "fake-extra-model"}) == {}
        )
        fake.script([Reply(text="listed")])
        before = len(fake.requests)
        assert await client.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert [r.body["model"] for r in fake.requests[before:] if r.path.endswith("/chat/completions")] == [
            "fake-extra-model"
        ]
        process.assert_clean()


def test_run_refuses_a_model_the_endpoint_does_not_list_with_exit_code_2(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    result = run_hermes(server_env(tmp_path, fake), "run", "--model", "nope-model", "hello", cwd=project)
    assert result.returncode == exit_codes.USAGE, result.stderr
    assert "--model nope-model: the endpoint does not offer this model; choose one of:" in result.stderr
    assert "fake-extra-model" in result.stderr
    assert not [r for r in fake.requests if r.path.endswith("/chat/completions")]
