"""The start-up settings check without pydantic (core/config_plain.py) never decides
differently from the settings model: what it passes, `load_settings` passes too, and
builds from it without validation the very settings validation would have built; what it
cannot vouch for goes to the model, so a bad configuration still stops `--stdio` with the
model's message."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from hermes_acp.cli import config_problem
from hermes_core.config import ConfigError, Settings, load_settings
from hermes_core.config_plain import FIELDS, RULES, SDK_ENV, env_overrides, plainly_valid
from tests.support.acp_harness import server_env, spawn_server

TEXTS = ["", "0", "1", "2", "01", "-1", "+1", " 3", "1.5", "0.5", "1e3", "1_000", "inf", "nan"]
TEXTS += ["true", "false", "True", "yes", "off", "on", "abc", "openai", "anthropic", "ask", "yolo"]
TEXTS += ["info", "debug", "low", "read-only", "responses", "a,b", "99999999999"]
VALUES: list[Any] = [0, 1, 2, -1, 10**12, 0.0, 0.5, 1.0, 1.5, -0.5, float("inf"), float("nan")]
VALUES += [True, False, "x", "1", "openai", "ask", "on", [], ["a", "b"], [1], {}, {"a": 1}]


def _choices(annotation: Any) -> set[str] | None:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return set(args)
    if isinstance(annotation, types.UnionType):
        found = [c for c in map(_choices, args) if c is not None]
        return found[0] if found else None
    return None


def _environ(home: Path, **variables: str) -> dict[str, str]:
    return {"HERMES_ACP_HOME": str(home), **variables}


def _agree(environ: dict[str, str]) -> bool:
    """Whether the check without pydantic passed; fails the test when it passed something
    the settings model refuses."""
    plain = plainly_valid(environ)
    if plain:
        built = load_settings(environ)  # raises ConfigError: the fast path was wrong
        validated = Settings.model_validate(_raw_values(environ))
        assert built == validated
        for name in Settings.model_fields:  # 5 and 5.0 are equal; a float field holds 5.0
            assert type(getattr(built, name)) is type(getattr(validated, name)), name
    return plain


def _raw_values(environ: dict[str, str]) -> dict[str, Any]:
    home = Path(environ["HERMES_ACP_HOME"])
    config = home / "config.toml"
    values = tomllib.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
    return {**values, **env_overrides(environ), "home": home}


def test_the_table_names_every_setting_and_its_choices() -> None:
    assert set(Settings.model_fields) == FIELDS
    for name, field in Settings.model_fields.items():
        choices = _choices(field.annotation)
        if choices is not None:
            rule = RULES[name]
            assert {c for c in choices if rule(c)} == choices, name
            assert not rule(next(iter(choices)) + "x"), name


@pytest.mark.parametrize("key", sorted(FIELDS - {"home"}))
def test_environment_values_pass_only_where_the_model_takes_them(tmp_path: Path, key: str) -> None:
    variable = f"HERMES_ACP_{key.upper()}"
    for text in TEXTS:
        _agree(_environ(tmp_path, **{variable: text}))


@pytest.mark.parametrize("key", sorted(FIELDS - {"home"}))
def test_file_values_pass_only_where_the_model_takes_them(tmp_path: Path, key: str) -> None:
    config = tmp_path / "config.toml"
    for value in VALUES:
        config.write_text(tomli_w.dumps({key: value}), encoding="utf-8")
        _agree(_environ(tmp_path))


def test_a_usual_configuration_needs_no_model(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'provider = "anthropic"\nmodel = "claude-sonnet-4-5"\nanthropic_api_key = "sk"\n'
        "max_iterations = 40\ncompression_threshold = 0.7\nauto_compact = false\n"
        'models = ["a", "b"]\nsandbox = "read-only"\n',
        encoding="utf-8",
    )
    env = {"OPENAI_API_KEY": "sk", "HERMES_ACP_LOG_LEVEL": "debug", "HERMES_ACP_MAX_RETRIES": "0"}
    env.update({name: "x" for name in SDK_ENV})
    assert _agree(_environ(tmp_path, **env))
    assert _agree(_environ(tmp_path / "absent"))
    assert _agree(_environ(tmp_path, HERMES_ACP_COMMAND_TIMEOUT_SECONDS="2.5", HERMES_ACP_TRACE="x"))


def test_a_plain_configuration_builds_no_validator(tmp_path: Path) -> None:
    """The settings of a usual configuration are made without pydantic building the
    settings model's validator (~20-30 ms of a session's start); they are what validation
    makes of the same values (`_agree`)."""
    (tmp_path / "config.toml").write_text('model = "m"\nmax_iterations = 40\n', encoding="utf-8")
    probe = (
        "from hermes_core.config import Settings, load_settings\n"
        "settings = load_settings()\n"
        "print(settings.model, settings.max_iterations, Settings.__pydantic_complete__)\n"
    )
    env = {"HERMES_ACP_HOME": str(tmp_path), "HERMES_ACP_MAX_RETRIES": "0", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["m", "40", "False"]


@pytest.mark.parametrize(
    ("config", "variables", "expected"),
    [
        ('modle = "gpt-4.1"\n', {}, "unknown key 'modle'"),
        ("provider = \n", {}, "not valid TOML"),
        ("max_iterations = 0\n", {}, "max_iterations"),
        ("", {"HERMES_ACP_MAX_ITERATIONS": "0"}, "max_iterations"),
        ("", {"HERMES_ACP_DEFAULT_MODE": "reckless"}, "default_mode"),
        ('[prices.m]\ninput = "a"\n', {}, "prices.m.input"),
    ],
)
def test_a_bad_configuration_gets_the_models_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, variables: dict[str, str], expected: str
) -> None:
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    environ = _environ(tmp_path, **variables)
    assert not plainly_valid(environ)
    with pytest.raises(ConfigError) as refused:
        load_settings(environ)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert config_problem() == f"hermes-acp is misconfigured: {refused.value}"
    assert expected in str(refused.value)


@pytest.mark.asyncio
async def test_a_bad_value_in_the_environment_stops_stdio_at_start_up(tmp_path: Path) -> None:
    env = server_env(tmp_path, OPENAI_API_KEY="sk-test", HERMES_ACP_MAX_ITERATIONS="0")
    async with spawn_server(env, check_exit=False) as process:
        assert await process.wait() == 2
        assert "hermes-acp is misconfigured" in process.stderr
        assert "max_iterations: Input should be greater than 0" in process.stderr
