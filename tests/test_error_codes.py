"""One table maps the engine's error families to JSON-RPC codes."""

from __future__ import annotations

import importlib

import pytest

from hermes_acp.session.errors import CODES, INTERNAL_ERROR, INVALID_PARAMS, error_response
from hermes_acp.session.options import InvalidOption
from hermes_core.config import ConfigError
from hermes_core.errors import HermesError, InvalidInput
from hermes_core.providers.base import ErrorKind, ProviderError
from hermes_core.shell.lexer import ShellSyntaxError


@pytest.mark.parametrize("name", list(CODES))
def test_every_row_of_the_table_names_a_family_of_the_hierarchy(name: str) -> None:
    module, _, qualname = name.rpartition(".")
    family = getattr(importlib.import_module(module), qualname)
    assert issubclass(family, HermesError)


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
