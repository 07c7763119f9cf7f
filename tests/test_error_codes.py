"""One table maps the engine's error families to JSON-RPC codes."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import hermes_core.errors
from hermes_acp.session.error_codes import CODES, error_response
from hermes_acp.session.errors import INTERNAL_ERROR, INVALID_PARAMS
from hermes_acp.session.options import InvalidOption
from hermes_core.config import ConfigError
from hermes_core.errors import HermesError, InvalidInput
from hermes_core.providers.base import ErrorKind, ProviderError
from hermes_core.shell.tokens import ShellSyntaxError

ROOT = Path(__file__).resolve().parent.parent


def _families_drawn_in_the_hierarchy() -> dict[str, str]:
    """core/errors.py's drawing of the hierarchy: family name -> the file it names (or "")."""
    drawn = {}
    for line in (hermes_core.errors.__doc__ or "").splitlines():
        if match := re.match(r"\s*[├└]── (\w+)\s+(core/\S+\.py)?", line):
            drawn[match[1]] = match[2] or ""
    return drawn


def test_the_table_has_a_row_for_every_family_the_hierarchy_draws() -> None:
    drawn = _families_drawn_in_the_hierarchy()
    assert len(drawn) >= 6
    assert {family.__name__ for family in CODES} == {*drawn, "HermesError"}


@pytest.mark.parametrize(
    ("family", "path"), [(f, p) for f, p in _families_drawn_in_the_hierarchy().items() if p]
)
def test_each_family_lives_in_the_file_the_hierarchy_names(family: str, path: str) -> None:
    module = "hermes_core" + path.removeprefix("core").removesuffix(".py").replace("/", ".")
    assert (ROOT / path).is_file(), f"core/errors.py names {path}, which does not exist"
    assert issubclass(getattr(importlib.import_module(module), family), HermesError)


def test_a_bad_option_names_its_field_as_invalid_params() -> None:
    error = error_response(InvalidOption("unknown configId 'x'", "configId"))
    assert (error.code, str(error)) == (INVALID_PARAMS, "unknown configId 'x'")
    assert error.data == {"field": "configId"}


def test_a_config_error_is_for_the_user_to_read() -> None:
    error = error_response(ConfigError("bad toml"), "hermes-acp is misconfigured: ")
    assert error.code == INTERNAL_ERROR
    assert error.data == {"details": "hermes-acp is misconfigured: bad toml"}


def test_the_nearest_family_wins_and_a_stranger_is_internal() -> None:
    assert error_response(ShellSyntaxError("unclosed quote")).code == INVALID_PARAMS
    assert isinstance(ShellSyntaxError("x"), ValueError), "callers catching ValueError still catch it"
    assert error_response(ProviderError(ErrorKind.FATAL, "down")).code == INTERNAL_ERROR
    turn = error_response(RuntimeError("boom"), "the turn failed: ", {"details": "boom"})
    assert (turn.code, str(turn), turn.data) == (INTERNAL_ERROR, "the turn failed: boom", {"details": "boom"})
    assert issubclass(InvalidInput, ValueError)
