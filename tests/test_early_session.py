"""What the early `session/new` answer (hermes_acp/startup/early_session.py) declines:
anything but a plainly valid request with plain settings and credentials in plain sight
is left, unanswered and unread, for the server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.startup.early_session import answer_session_new
from hermes_acp.startup.hello import ClientHello

HELLO = ClientHello(protocol_version=1)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    yield read_fd, write_fd
    os.close(read_fd)
    os.close(write_fd)


def line(params: Any, **message: Any) -> bytes:
    body = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": params, **message}
    return json.dumps(body).encode() + b"\n"


def written(read_fd: int) -> bytes:
    try:
        return os.read(read_fd, 1 << 16)
    except BlockingIOError:
        return b""


def environ(tmp_path: Path, **settings: str) -> dict[str, str]:
    return {"HERMES_ACP_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-test", **settings}


def test_a_plain_session_new_is_answered_and_the_rest_is_left(pipe: tuple[int, int], tmp_path: Path) -> None:
    read_fd, write_fd = pipe
    rest = b'{"jsonrpc":"2.0","id":2,"method":"session/prompt"}\n'
    answered = answer_session_new(
        write_fd, line({"cwd": str(tmp_path), "mcpServers": []}) + rest, HELLO, environ=environ(tmp_path)
    )
    assert answered is not None
    session, unread = answered
    assert unread == rest
    assert (session.cwd, session.extra_dirs) == (str(tmp_path), [])
    response = json.loads(written(read_fd))
    assert response["id"] == 1 and response["result"] == session.answer
    assert response["result"]["sessionId"] == session.session_id


def odd_lines(tmp_path: Path) -> dict[str, bytes]:
    cwd = str(tmp_path)
    plain = {"cwd": cwd, "mcpServers": []}
    return {
        "MCP servers": line({**plain, "mcpServers": [{"name": "x", "command": "x", "args": [], "env": []}]}),
        "no mcpServers": line({"cwd": cwd}),
        "a _meta": line({**plain, "_meta": {}}),
        "an unknown key": line({**plain, "other": 1}),
        "additionalDirectories null": line({**plain, "additionalDirectories": None}),
        "a relative additional directory": line({**plain, "additionalDirectories": ["rel"]}),
        "a missing additional directory": line({**plain, "additionalDirectories": [f"{cwd}/gone"]}),
        "a relative cwd": line({**plain, "cwd": "rel"}),
        "a file as cwd": line({**plain, "cwd": f"{cwd}/file"}),
        "a NUL in the cwd": line({**plain, "cwd": cwd + "\0"}),
        "a cwd that is not text": line({**plain, "cwd": 1}),
        "a boolean id": line(plain, id=True),
        "a null id": line(plain, id=None),
        "a notification": json.dumps({"jsonrpc": "2.0", "method": "session/new", "params": plain}).encode()
        + b"\n",
        "another method": line(plain, method="session/load"),
        "an extra message key": line(plain, extra=1),
        "no newline yet": line(plain).rstrip(b"\n"),
        "not JSON": b"{session/new\n",
        "params as a list": line([cwd]),
    }


@pytest.mark.parametrize("case", list(odd_lines(Path("/"))), ids=list(odd_lines(Path("/"))))
def test_odd_requests_are_left_for_the_server(pipe: tuple[int, int], tmp_path: Path, case: str) -> None:
    (tmp_path / "file").write_text("")
    read_fd, write_fd = pipe
    assert answer_session_new(write_fd, odd_lines(tmp_path)[case], HELLO, environ=environ(tmp_path)) is None
    assert written(read_fd) == b""


@pytest.mark.parametrize(
    ("settings", "config"),
    [
        ({"OPENAI_API_KEY": ""}, None),  # no key: the server answers the auth error
        ({"HERMES_ACP_PROVIDER": "anthropic"}, None),  # the key is openai's, not anthropic's
        ({"HERMES_ACP_PROVIDER": "bedrock"}, None),  # the AWS chain decides: only the server knows
        ({"HERMES_ACP_MAX_ITERATIONS": "0"}, None),  # out of bounds: the full check says why
        ({}, '[context_windows]\n"gpt-4.1" = 50000\n'),  # a table: only the full model reads it
        ({}, "not = [toml"),
    ],
    ids=["no key", "another provider's key", "bedrock", "a bad number", "a table", "bad TOML"],
)
def test_settings_the_plain_reader_declines_are_left_for_the_server(
    pipe: tuple[int, int], tmp_path: Path, settings: dict[str, str], config: str | None
) -> None:
    read_fd, write_fd = pipe
    env = environ(tmp_path, **settings)
    if config is not None:
        home = Path(env["HERMES_ACP_HOME"])
        home.mkdir()
        (home / "config.toml").write_text(config)
    request = line({"cwd": str(tmp_path), "mcpServers": []})
    assert answer_session_new(write_fd, request, HELLO, environ=env) is None
    assert written(read_fd) == b""


def test_a_custom_endpoint_needs_no_key(pipe: tuple[int, int], tmp_path: Path) -> None:
    read_fd, write_fd = pipe
    env = environ(tmp_path, OPENAI_API_KEY="", HERMES_ACP_PROVIDER="custom", HERMES_ACP_BASE_URL="http://x")
    request = line({"cwd": str(tmp_path), "mcpServers": []})
    assert answer_session_new(write_fd, request, HELLO, environ=env) is not None
    assert written(read_fd)
