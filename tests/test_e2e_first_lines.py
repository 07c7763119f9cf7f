"""The first lines a fresh server reads get the same answers as before the schema left
start-up: a malformed first line, `initialize` with wrong types, requests before
`initialize`, and a burst of requests right after it (before the warm-up is done).

Each scenario is written in one go to a fresh process; the answers are compared, by
request id, with `fixtures/first-lines-answers.json`, recorded from the server as it was
before (commit 5c5fdc4, which imported the whole SDK before reading a line):

    python -m tests.test_e2e_first_lines --record SOURCE_TREE
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import FIXTURES, ServerProcess, server_env, spawn_server

ANSWERS = FIXTURES / "first-lines-answers.json"
ZED_INITIALIZE = json.loads((FIXTURES / "zed-initialize.json").read_text())


def _request(request_id: str, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _initialize(request_id: str, **params: Any) -> dict[str, Any]:
    return _request(request_id, "initialize", params)


def _caps(request_id: str, capabilities: Any) -> dict[str, Any]:
    return _initialize(request_id, protocolVersion=1, clientCapabilities=capabilities)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _odd_first(first: dict[str, Any] | bytes) -> list[dict[str, Any] | bytes]:
    """A first line that the early answer (hermes_acp/startup/early_hello.py) leaves to the server."""
    return [first, ZED_INITIALIZE]


_BARE = {"protocolVersion": 1}


NEW = {"cwd": "{cwd}", "mcpServers": []}
SESSION_REQUESTS = [
    _request("new", "session/new", NEW),
    _request("new-bad", "session/new", {"cwd": 5, "mcpServers": []}),
    _request("list", "session/list", {"cwd": "/no/such/project"}),
    _request("auth", "authenticate", {"methodId": "env"}),
    _request("auth-bad", "authenticate", {"methodId": "nope"}),
    _request(
        "prompt-unknown", "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}
    ),
    _request("mode-bad", "session/set_mode", {"sessionId": "nope"}),
    _request(
        "config-bool",
        "session/set_config_option",
        {"sessionId": "nope", "configId": "x", "type": "boolean", "value": True},
    ),
    _request("unknown", "no/such_method", {}),
    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}},
    _request("close-unknown", "session/close", {"sessionId": "nope"}),
]

SCENARIOS: dict[str, list[dict[str, Any] | bytes]] = {
    "a malformed first line": [b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"', ZED_INITIALIZE],
    "a first line that is not UTF-8": [b"\xc3\x28 not utf-8", b"[]", _initialize("after", protocolVersion=1)],
    "initialize with wrong types": [
        _initialize("version-string", protocolVersion="1"),
        _initialize("version-bool", protocolVersion=True),
        _initialize("version-float", protocolVersion=1.0),
        _initialize("version-too-big", protocolVersion=70000),
        _initialize("version-negative", protocolVersion=-1),
        _initialize("version-missing"),
        _request("params-array", "initialize", [1]),
        _request("params-missing", "initialize"),
        _caps("caps-string", "x"),
        _caps("caps-null", None),
        _caps("fs-number", {"fs": 5, "auth": {"terminal": True}}),
        _caps("auth-number", {"auth": 5}),
        _caps("auth-terminal-yes", {"auth": {"terminal": "yes"}}),
        _caps("auth-terminal-one", {"auth": {"terminal": 1}}),
        _caps("auth-terminal-maybe", {"auth": {"terminal": "maybe"}}),
        _caps("encodings-number", {"positionEncodings": 5, "auth": {"terminal": True}}),
        _caps("session-string", {"session": "x", "auth": {"terminal": True}}),
        _caps("snake-case", {"fs": {"read_text_file": True}, "auth": {"terminal": True}}),
        _caps("unknown-capability", {"teleport": True, "auth": {"terminal": True}}),
        _caps("meta-list", {"_meta": [1], "auth": {"terminal": True}}),
        _initialize("info-name-number", protocolVersion=1, clientInfo={"name": 5, "version": "1"}),
        _initialize(
            "extra-top-key", protocolVersion=1, surprise=True, clientCapabilities={"auth": {"terminal": True}}
        ),
    ],
    "requests before initialize": [*SESSION_REQUESTS, ZED_INITIALIZE],
    "a burst right after initialize": [ZED_INITIALIZE, *SESSION_REQUESTS],
    "first: a batch": _odd_first(
        b'[{"jsonrpc":"2.0","id":"b","method":"initialize","params":{"protocolVersion":1}}]'
    ),
    "first: a blank line": _odd_first(b"  "),
    "first: initialize ending in CRLF": _odd_first(json.dumps(_initialize("crlf", **_BARE)).encode() + b"\r"),
    "first: initialize as a notification": _odd_first(
        {"jsonrpc": "2.0", "method": "initialize", "params": _BARE}
    ),
    "first: initialize with a null id": _odd_first({**_initialize("x", **_BARE), "id": None}),
    "first: initialize with a boolean id": _odd_first({**_initialize("x", **_BARE), "id": True}),
    "first: initialize with a float id": _odd_first({**_initialize("x", **_BARE), "id": 1.5}),
    "first: initialize under jsonrpc 1.0": _odd_first({**_initialize("v1", **_BARE), "jsonrpc": "1.0"}),
    "first: initialize with an extra envelope key": _odd_first({**_initialize("extra", **_BARE), "note": 1}),
    "first: initialize nested past the limit": _odd_first(_initialize("deep", **_BARE, _meta=_nested(250))),
    "first: initialize nested deep within the limit": _odd_first(
        _initialize("deepish", **_BARE, _meta=_nested(100))
    ),
}


def _lines(server: ServerProcess, scenario: list[dict[str, Any] | bytes], cwd: Path) -> bytes:
    """The scenario as one write; the harness learns each request, to check its answer."""
    out = []
    for item in scenario:
        if isinstance(item, bytes):
            with contextlib.suppress(ValueError):
                server.checker.sent(json.loads(item))
            out.append(item)
        else:
            line = json.dumps(item).replace("{cwd}", str(cwd))
            server.checker.sent(json.loads(line))
            out.append(line.encode())
    return b"\n".join(out) + b"\n"


def _answered_ids(scenario: list[dict[str, Any] | bytes]) -> int:
    """How many answers the scenario gets: one per request and per malformed line."""
    return sum(1 for item in scenario if (item.strip() if isinstance(item, bytes) else "id" in item))


def _normalised(message: dict[str, Any], cwd: Path) -> Any:
    text = json.dumps(message, sort_keys=True).replace(str(cwd), "<cwd>")
    text = re.sub(r'"[0-9a-f]{32}"', '"<session>"', text)
    text = re.sub(r'"updatedAt": "[^"]*"', '"updatedAt": "<time>"', text)
    return json.loads(text)


async def observe(name: str, command: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The answers to scenario `name` from a fresh server: malformed lines in order, the
    rest by request id."""
    scenario = SCENARIOS[name]
    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "project"
        cwd.mkdir()
        env = server_env(home, None, OPENAI_API_KEY="test", OPENAI_BASE_URL="http://127.0.0.1:9")
        async with spawn_server(env, command=command) as server:
            return await _answers(server, scenario, cwd)


async def _answers(
    server: ServerProcess, scenario: list[dict[str, Any] | bytes], cwd: Path
) -> dict[str, Any]:
    assert server.process.stdin is not None
    server.process.stdin.write(_lines(server, scenario, cwd))
    await server.process.stdin.drain()
    expected = _answered_ids(scenario)
    by_id: dict[str, Any] = {}
    unidentified: list[Any] = []
    while len(by_id) + len(unidentified) < expected:
        message = await server.next_message(60)
        if "method" in message:
            continue  # notifications (available_commands_update) are not what this compares
        if message.get("id") is None:
            unidentified.append(_normalised(message, cwd))
        else:
            by_id[str(message["id"])] = _normalised(message, cwd)
    return {"by_id": by_id, "unidentified": unidentified}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_the_first_lines_get_the_answers_they_always_got(name: str) -> None:
    recorded = json.loads(ANSWERS.read_text())[name]
    assert await observe(name) == recorded


async def _record(source: Path) -> None:
    command = (
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(source)!r}); from hermes_acp.cli import main; sys.exit(main())",
        "--stdio",
    )
    answers = {name: await observe(name, command) for name in sorted(SCENARIOS)}
    ANSWERS.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="record the answers of a server built from SOURCE")
    parser.add_argument("--record", type=Path, required=True, metavar="SOURCE")
    asyncio.run(_record(parser.parse_args().record))
