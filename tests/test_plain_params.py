"""Requests read without the schema decide as the schema does, or decline.

Each reader in hermes_acp/startup/plain_params.py and the SDK's model for its method are fed
the same generated params: valid ones of every shape, and ones that break each field
in turn (wrong types, missing keys, unknown enum values, extra keys, aliases the SDK
would accept). Whenever a reader accepts, the schema accepts too and the handler reads
the same values from both; every valid shape below must be accepted by its reader,
or the fast path would be a fast path for nobody.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from hermes_acp.server import AcpServer
from hermes_acp.session.factory import Placement
from hermes_acp.session.mcp_servers import server_configs
from hermes_acp.startup.plain_params import READERS
from hermes_acp.startup.schema_params import schema_model
from hermes_acp.transport import LineTransport

CWD = "/home/user/project"
META = {"_meta": {"zed": {"thread": 7}}}

# values a field may be given: every one is wrong for some field, right for some other
ODD_VALUES: list[Any] = [
    None,
    0,
    -1,
    2**70,
    1.5,
    float("inf"),
    True,
    "",
    "x",
    "\ud800",
    [],
    ["x"],
    [1],
    {},
    {"a": 1},
]

STDIO = {"name": "files", "command": "/usr/bin/mcp-files", "args": ["--root", "/"], "env": []}
STDIO_ENV = {**STDIO, "env": [{"name": "TOKEN", "value": "s3cret"}, {"name": "A", "value": "", **META}]}
HTTP = {"type": "http", "name": "web", "url": "https://mcp.example/x", "headers": []}
HTTP_HEADERS = {**HTTP, "headers": [{"name": "Authorization", "value": "Bearer t"}]}
SSE = {
    "type": "sse",
    "name": "events",
    "url": "http://127.0.0.1:9/sse",
    "headers": [{"name": "X", "value": "1"}],
}
MCP_SERVERS = [
    *(STDIO, STDIO_ENV, {**STDIO, **META}, {**STDIO, "type": "stdio"}),
    *(HTTP, HTTP_HEADERS, SSE, {**SSE, **META}),
]

ANNOTATIONS: list[Any] = [
    None,
    {},
    {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"},
    {"priority": 1, **META},
]
TEXT = {"type": "text", "text": "Explain this file"}
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
AUDIO = {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
LINK = {"type": "resource_link", "uri": "file:///home/user/project/a.py", "name": "a.py"}
LINK_FULL = {**LINK, "title": "A", "description": "the module", "mimeType": "text/x-python", "size": 120}
EMBEDDED_TEXT = {"type": "resource", "resource": {"uri": "file:///a.py", "text": "print(1)\n"}}
EMBEDDED_BLOB = {
    "type": "resource",
    "resource": {"uri": "file:///a.bin", "blob": "AAEC", "mimeType": "application/octet-stream", **META},
}
BLOCKS = [
    TEXT,
    IMAGE,
    {**IMAGE, "uri": "file:///i.png"},
    AUDIO,
    LINK,
    LINK_FULL,
    EMBEDDED_TEXT,
    EMBEDDED_BLOB,
]


def _server_table() -> dict[str, Any]:
    """method -> params model, from a real server's request and notification tables."""

    async def build() -> AcpServer:
        async def write(data: bytes) -> None:
            pass

        return AcpServer(LineTransport(asyncio.StreamReader(), write))

    server = asyncio.run(build())
    return {method: model for method, (model, _) in {**server.requests, **server.notifications}.items()}


TABLE = _server_table()


def _model(method: str, params: dict[str, Any]) -> type[BaseModel]:
    """The schema model the server validates `method` with."""
    model = TABLE[method]
    chosen = model if isinstance(model, str | type) else model(params)
    resolved: type[BaseModel] = schema_model(chosen) if isinstance(chosen, str) else chosen
    assert resolved.__module__ == "acp.schema"
    return resolved


def _handler_view(method: str, request: Any, params: dict[str, Any]) -> Any:
    """What the method's handler reads from a validated request (see AcpServer's handlers)."""
    if method in ("session/new", "session/load", "session/resume", "session/fork"):
        place = Placement.of(request)
        session = None if method == "session/new" else request.session_id
        return (session, place.cwd, place.extra_dirs, server_configs(place.mcp_servers))
    if method == "session/prompt":
        return (request.session_id, list(params["prompt"]))
    if method == "session/list":
        return (request.cwd, request.cursor)
    if method == "session/set_mode":
        return (request.session_id, request.mode_id)
    if method == "session/set_config_option":
        return (request.session_id, request.config_id, request.value)
    if method == "$/cancel_request":
        return params.get("requestId")
    if method == "authenticate":
        return request.method_id
    if method == "logout":
        return None
    return request.session_id


def check(method: str, params: dict[str, Any]) -> bool:
    """Asserts the reader agrees with the schema whenever it accepts; whether it did."""
    snapshot = copy.deepcopy(params)
    plain = READERS[method](params)
    assert params == snapshot, "a reader must not change the params"
    if plain is None:
        return False
    try:
        validated = _model(method, params).model_validate(params)
    except ValidationError as exc:
        raise AssertionError(f"{method}: the reader took {params!r}, the schema refused: {exc}") from None
    assert _handler_view(method, plain, params) == _handler_view(method, validated, params), params
    return True


# -- generated payloads -------------------------------------------------------------------------


def _mutations(value: Any) -> Iterator[Any]:
    """`value` broken in each way at each place: a field replaced by each odd value, a
    field left out, an extra key, a snake_case alias, a list item broken the same ways."""
    if isinstance(value, dict):
        yield {**value, "surprise": 1}
        for key, child in value.items():
            yield {k: v for k, v in value.items() if k != key}
            snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
            if snake != key:
                yield {(snake if k == key else k): v for k, v in value.items()}
            for odd in ODD_VALUES:
                yield {**value, key: odd}
            for broken in _mutations(child):
                yield {**value, key: broken}
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            for broken in _mutations(item):
                yield [*value[:index], broken, *value[index + 1 :]]


def _valid(method: str) -> list[dict[str, Any]]:
    """Plainly valid params of every shape the method takes."""
    session = {"sessionId": "s-1"}
    places = [
        {"cwd": CWD, "mcpServers": []},
        {"cwd": CWD, "mcpServers": MCP_SERVERS, "additionalDirectories": ["/srv/a", "/srv/b"], **META},
        {"cwd": CWD, "mcpServers": [STDIO_ENV], "additionalDirectories": None},
    ]
    if method == "session/new":
        return places
    if method == "session/load":
        return [{**session, **place} for place in places]
    if method in ("session/resume", "session/fork"):
        return [{**session, **place} for place in places] + [{**session, "cwd": CWD}]
    if method == "session/prompt":
        prompts = [[block] for block in BLOCKS] + [BLOCKS, []]
        prompts += [
            [{**block, "annotations": note}] for block, note in itertools.product(BLOCKS, ANNOTATIONS)
        ]
        prompts += [
            [{**TEXT, **META}],
            [{**EMBEDDED_TEXT, "resource": {**EMBEDDED_TEXT["resource"], **META}}],
        ]
        return [{**session, "prompt": prompt} for prompt in prompts] + [{**session, "prompt": [TEXT], **META}]
    if method == "session/list":
        return [{}, {"cwd": CWD}, {"cursor": "c2"}, {"cwd": None, "cursor": None, **META}]
    if method == "session/set_mode":
        return [{**session, "modeId": "plan"}, {**session, "modeId": "ask", **META}]
    if method == "session/set_config_option":
        return [
            {**session, "configId": "model", "value": "gpt-4.1"},
            {**session, "configId": "yolo", "type": "boolean", "value": True, **META},
            {**session, "configId": "yolo", "type": "boolean", "value": False},
        ]
    if method == "$/cancel_request":
        return [{"requestId": 7}, {"requestId": "abc"}, {"requestId": None, **META}]
    if method == "authenticate":
        return [{"methodId": "env"}, {"methodId": "setup", **META}]
    if method == "logout":
        return [{}, META]
    return [session, {**session, **META}]  # cancel, close, delete


@pytest.mark.parametrize("method", sorted(READERS))
def test_every_valid_shape_takes_the_fast_path_with_the_schemas_values(method: str) -> None:
    for params in _valid(method):
        assert check(method, params), f"{method}: declined plainly valid {params!r}"


@pytest.mark.parametrize("method", sorted(READERS))
def test_broken_params_are_declined_or_read_as_the_schema_reads_them(method: str) -> None:
    tried = taken = 0
    for valid in _valid(method):
        for params in _mutations(valid):
            tried += 1
            taken += check(method, params)
    assert tried > taken  # some were declined: the generator did break things


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("session/new", {"cwd": CWD}),  # mcpServers is required here
        ("session/new", {"cwd": CWD, "mcp_servers": []}),  # the SDK takes the alias: its call
        ("session/new", {"cwd": CWD, "mcpServers": [{"type": "acp", "name": "a", "id": "x"}]}),
        ("session/new", {"cwd": CWD, "mcpServers": [{**HTTP, "type": "websocket"}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "video", "data": "x"}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": ["text"], "text": "x"}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{**TEXT, "annotations": {"priority": "high"}}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{**LINK, "size": True}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{**LINK, "size": 1.0}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "resource", "resource": {"uri": "u"}}]}),
        (
            "session/prompt",
            {
                "sessionId": "s",
                "prompt": [{"type": "resource", "resource": {"uri": "u", "text": "", "blob": ""}}],
            },
        ),
        ("session/prompt", {"sessionId": "s", "prompt": [TEXT], "_meta": "x"}),
        ("session/set_config_option", {"sessionId": "s", "configId": "c", "value": "v", "type": "select"}),
        (
            "session/set_config_option",
            {"sessionId": "s", "configId": "c", "value": "true", "type": "boolean"},
        ),
        ("$/cancel_request", {"requestId": True}),
        ("$/cancel_request", {}),
        ("session/cancel", {"sessionId": 5}),
    ],
)
def test_what_the_schema_would_coerce_salvage_or_refuse_is_declined(
    method: str, params: dict[str, Any]
) -> None:
    assert READERS[method](params) is None


def test_every_method_read_by_the_schema_has_a_reader() -> None:
    """A method validated by an `acp.schema` model without a reader would import the schema
    for every fresh thread that calls it (initialize has its own, hermes_acp/startup/hello.py)."""
    by_schema = {method for method in TABLE if method != "initialize" and _uses_schema(TABLE[method])}
    assert by_schema == set(READERS)


def _uses_schema(model: Any) -> bool:
    chosen = model if isinstance(model, str | type) else model({})
    resolved = schema_model(chosen) if isinstance(chosen, str) else chosen
    return bool(resolved.__module__ == "acp.schema")
