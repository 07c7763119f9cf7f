"""`initialize` read without the schema decides exactly as the schema does, or declines."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from acp.schema import InitializeRequest

from hermes_acp.startup.hello import ClientHello, InitializeParams, is_plain, read_plain
from tests.support.acp_harness import FIXTURES

ZED = json.loads((FIXTURES / "zed-initialize.json").read_text())["params"]

# Values each capability may take, plain or not: the product below covers how they combine.
FLAGS: list[Any] = [True, False, None, "yes", 1, 0, "maybe", [], {}]
OBJECTS: list[Any] = [None, {}, {"_meta": {"x": 1}}, {"_meta": 5}, "x", 5, [], {"other": 1}]


def _schema_reading(params: dict[str, Any]) -> ClientHello | str:
    try:
        return ClientHello.from_request(InitializeRequest.model_validate(params))
    except Exception as exc:  # the server answers these as errors; the fast path must decline them
        return f"{type(exc).__name__}"


def _check(params: dict[str, Any]) -> bool:
    """Asserts the fast path agrees with the schema; whether it took the params."""
    if not is_plain(params):
        return False
    assert read_plain(params) == _schema_reading(params), params
    return True


def test_zeds_payload_takes_the_fast_path_with_the_schemas_answer() -> None:
    assert _check(ZED)
    hello = InitializeParams.model_validate(ZED)
    assert hello.client_name == "zed"
    assert hello.read_file and hello.write_file and hello.terminal and hello.terminal_auth
    assert hello.terminal_meta and hello.boolean_options and hello.elicitation_form


@pytest.mark.parametrize(("marker", "offered"), [(True, True), (False, False), ("yes", False), (None, False)])
def test_the_legacy_terminal_auth_marker_gets_the_terminal_method_on_both_paths(
    marker: Any, offered: bool
) -> None:
    """`_meta["terminal-auth"]: true` (the ACP registry's validator, Zed) counts as auth.terminal."""
    caps: dict[str, Any] = {"terminal": True, "_meta": {"terminal-auth": marker}}
    params = {"protocolVersion": 1, "clientCapabilities": caps}
    assert _check(params)
    assert InitializeParams.model_validate(params).terminal_auth is offered
    caps["positionEncodings"] = ["utf-16"]  # off the fast path: the schema's reading
    assert not is_plain(params)
    assert InitializeParams.model_validate(params).terminal_auth is offered


@pytest.mark.parametrize("flag", FLAGS)
@pytest.mark.parametrize(
    "path", [("fs", "readTextFile"), ("fs", "writeTextFile"), ("auth", "terminal"), ("terminal",)]
)
def test_every_boolean_flag_agrees_with_the_schema(path: tuple[str, ...], flag: Any) -> None:
    caps: dict[str, Any] = {"auth": {"terminal": True}, "fs": {"readTextFile": True}}
    target = caps
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = flag
    took = _check({"protocolVersion": 1, "clientCapabilities": caps})
    assert took == (flag is None or isinstance(flag, bool))


def test_capability_objects_agree_with_the_schema() -> None:
    sessions = [None, {"configOptions": {"boolean": {}}}, {"configOptions": 5}, "x"]
    elicitations = [None, {"form": {}}, {"url": 5}]
    metas = [None, {"terminal_output": True}, [1]]
    taken = 0
    for fs, auth, session, elicitation, meta in itertools.product(
        OBJECTS[:4], OBJECTS, sessions, elicitations, metas
    ):
        caps = {"fs": fs, "auth": auth, "session": session, "elicitation": elicitation, "_meta": meta}
        taken += _check({"protocolVersion": 1, "clientCapabilities": {**caps, "terminal": True}})
    assert taken == 3 * 3 * 2 * 2 * 2  # every plain combination took the fast path


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": 70000},
        {"protocolVersion": -1},
        {"protocolVersion": 1, "clientCapabilities": "x"},
        {"protocolVersion": 1, "clientCapabilities": {"positionEncodings": 5, "auth": {"terminal": True}}},
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"read_text_file": True}}},
        {"protocolVersion": 1, "clientInfo": {"name": 5, "version": "1"}},
        {"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1", "title": 5}},
        {"protocolVersion": 1, "surprise": True},
        {"protocolVersion": 1, "_meta": [1]},
    ],
)
def test_what_the_schema_would_coerce_salvage_or_refuse_is_declined(params: dict[str, Any]) -> None:
    assert not is_plain(params)


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": 1},
        {"protocolVersion": 0, "clientCapabilities": None},
        {"protocolVersion": 65535, "clientCapabilities": {}},
        {"protocolVersion": 1, "clientInfo": {"name": "x", "version": "2", "title": None, "_meta": {}}},
        {"protocolVersion": 1, "clientInfo": None, "_meta": {"a": 1}},
    ],
)
def test_plain_params_take_the_fast_path(params: dict[str, Any]) -> None:
    assert _check(params)
