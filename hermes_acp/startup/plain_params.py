"""Request params read without the SDK's schema when they are plainly valid.

Why: the SDK validates params with its generated `acp.schema`, 280 pydantic models built
at import: 330-630 ms and 8-24 MB of resident memory (8 when the provider SDK's pydantic
machinery is in already). A fresh thread sends `session/new` and `session/prompt` and
little else, so a process that only ever sees plainly valid requests never needs it: at
rest after `initialize` it holds 40 MB instead of 63 (benchmarks/bench_startup.py).

How: each reader takes a request's params only when the schema's model would accept them
as they are, with nothing coerced or salvaged: known camelCase keys only, JSON strings
where strings go, objects where objects go, `_meta` an object or null. It returns the
same fields the handler reads from the schema model, under the same names, in a small
frozen dataclass. Anything else (a snake_case alias, a number for a string, an unknown
block type, an extra key, a malformed annotation the SDK would salvage) is declined
(None) and goes through the schema model as before, so every error is unchanged.
`tests/test_plain_params.py` feeds both the same generated payloads and holds each
reader to the schema's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Params = dict[str, Any]
META = "_meta"


@dataclass(frozen=True, slots=True)
class SessionRef:
    """session/cancel, session/close, session/delete."""

    session_id: str


@dataclass(frozen=True, slots=True)
class PlacementParams:
    """session/new (no session_id), session/load, session/resume, session/fork."""

    cwd: str
    additional_directories: list[str] | None
    mcp_servers: list[Params] | None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class PromptParams:
    session_id: str
    prompt: list[Params]


@dataclass(frozen=True, slots=True)
class ModeChange:
    session_id: str
    mode_id: str


@dataclass(frozen=True, slots=True)
class OptionChange:
    session_id: str
    config_id: str
    value: str | bool


@dataclass(frozen=True, slots=True)
class ListQuery:
    cwd: str | None
    cursor: str | None


@dataclass(frozen=True, slots=True)
class AuthChoice:
    method_id: str


@dataclass(frozen=True, slots=True)
class RequestRef:
    """$/cancel_request."""

    request_id: int | str | None


@dataclass(frozen=True, slots=True)
class NoParams:
    """logout: only `_meta`."""


# -- the shapes ---------------------------------------------------------------------------------

Check = Callable[[Any], bool]


def _object(value: Any, required: Mapping[str, Check], optional: Mapping[str, Check] | None = None) -> bool:
    """An object with every required key, each passing its check, no key the schema does
    not name, optional keys null or passing theirs, and `_meta` an object or null."""
    optional = optional or {}
    if type(value) is not dict:
        return False
    for key, child in value.items():
        if key in required:
            if not required[key](child):
                return False
        elif key in optional:
            if child is not None and not optional[key](child):
                return False
        elif key != META or (child is not None and type(child) is not dict):
            return False
    return required.keys() <= value.keys()


def _str(value: Any) -> bool:
    return type(value) is str


def _int(value: Any) -> bool:
    return type(value) is int  # not a bool, not a float: the schema would convert those


def _strs(value: Any) -> bool:
    return type(value) is list and all(_str(item) for item in value)


def _list_of(check: Check) -> Check:
    return lambda value: type(value) is list and all(check(item) for item in value)


def _equals(expected: str) -> Check:
    return lambda value: type(value) is str and value == expected


_pair = {"name": _str, "value": _str}  # env variables, HTTP headers
_pairs = _list_of(lambda item: _object(item, _pair))
_STDIO = {"name": _str, "command": _str, "args": _strs, "env": _pairs}
_REMOTE = {"name": _str, "url": _str, "headers": _pairs}


def _mcp_server(entry: Any) -> bool:
    """stdio (no `type`, or "stdio", which the schema's stdio model ignores), http or sse;
    `acp` and anything else go to the schema."""
    kind = entry.get("type") if type(entry) is dict else None
    if kind == "http" or kind == "sse":
        return _object(entry, {**_REMOTE, "type": _equals(kind)})
    if kind == "stdio":
        return _object(entry, {**_STDIO, "type": _equals(kind)})
    return _object(entry, _STDIO)


_ANNOTATIONS = {
    "audience": _strs,
    "lastModified": _str,
    "priority": lambda value: type(value) in (int, float),
}
_ANNOTATED = {"annotations": lambda value: _object(value, {}, _ANNOTATIONS)}
_RESOURCE = {"uri": _str}
_RESOURCE_OPTIONAL = {"mimeType": _str}


def _resource(value: Any) -> bool:
    """Text or blob contents; both at once is left to the schema's union."""
    if type(value) is not dict or ("text" in value) == ("blob" in value):
        return False
    body = "text" if "text" in value else "blob"
    return _object(value, {**_RESOURCE, body: _str}, _RESOURCE_OPTIONAL)


# block type -> (required keys, optional keys)
_BLOCKS: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    kind: ({**required, "type": _equals(kind)}, {**optional, **_ANNOTATED})
    for kind, required, optional in (
        ("text", {"text": _str}, {}),
        ("image", {"data": _str, "mimeType": _str}, {"uri": _str}),
        ("audio", {"data": _str, "mimeType": _str}, {}),
        (
            "resource_link",
            {"uri": _str, "name": _str},
            {"description": _str, "mimeType": _str, "title": _str, "size": _int},
        ),
        ("resource", {"resource": _resource}, {}),
    )
}


def _block(block: Any) -> bool:
    kind = block.get("type") if type(block) is dict else None
    if type(kind) is not str or kind not in _BLOCKS:
        return False
    return _object(block, *_BLOCKS[kind])


# -- the readers --------------------------------------------------------------------------------

_SESSION = {"sessionId": _str}
_PLACE = {"cwd": _str}
_PLACE_OPTIONAL = {"additionalDirectories": _strs, "mcpServers": _list_of(_mcp_server)}
_SERVERS_REQUIRED = {**_PLACE, "mcpServers": _PLACE_OPTIONAL["mcpServers"]}


def read_new_session(params: Params) -> PlacementParams | None:
    if _object(params, _SERVERS_REQUIRED, _PLACE_OPTIONAL):
        return PlacementParams(params["cwd"], params.get("additionalDirectories"), params["mcpServers"])
    return None


_LOAD = {**_SERVERS_REQUIRED, **_SESSION}
_RESUME = {**_PLACE, **_SESSION}


def read_load_session(params: Params) -> PlacementParams | None:
    return _restore(params) if _object(params, _LOAD, _PLACE_OPTIONAL) else None


def read_resume_or_fork(params: Params) -> PlacementParams | None:
    return _restore(params) if _object(params, _RESUME, _PLACE_OPTIONAL) else None


def _restore(params: Params) -> PlacementParams:
    return PlacementParams(
        params["cwd"], params.get("additionalDirectories"), params.get("mcpServers"), params["sessionId"]
    )


def read_session_ref(params: Params) -> SessionRef | None:
    return SessionRef(params["sessionId"]) if _object(params, _SESSION) else None


_PROMPT = {**_SESSION, "prompt": _list_of(_block)}


def read_prompt(params: Params) -> PromptParams | None:
    return PromptParams(params["sessionId"], params["prompt"]) if _object(params, _PROMPT) else None


_MODE = {**_SESSION, "modeId": _str}


def read_set_mode(params: Params) -> ModeChange | None:
    return ModeChange(params["sessionId"], params["modeId"]) if _object(params, _MODE) else None


_SELECT = {**_SESSION, "configId": _str, "value": _str}
_BOOLEAN = {
    **_SESSION,
    "configId": _str,
    "value": lambda value: type(value) is bool,
    "type": _equals("boolean"),
}


def read_set_config_option(params: Params) -> OptionChange | None:
    # With a `type` other than "boolean", the select model would ignore the key: declined.
    if _object(params, _BOOLEAN if "type" in params else _SELECT):
        return OptionChange(params["sessionId"], params["configId"], params["value"])
    return None


def read_list_sessions(params: Params) -> ListQuery | None:
    if _object(params, {}, {"cwd": _str, "cursor": _str}):
        return ListQuery(params.get("cwd"), params.get("cursor"))
    return None


def read_authenticate(params: Params) -> AuthChoice | None:
    return AuthChoice(params["methodId"]) if _object(params, {"methodId": _str}) else None


def _request_id(value: Any) -> bool:
    return value is None or _int(value) or _str(value)


def read_cancel_request(params: Params) -> RequestRef | None:
    return RequestRef(params["requestId"]) if _object(params, {"requestId": _request_id}) else None


def read_logout(params: Params) -> NoParams | None:
    return NoParams() if _object(params, {}) else None


# method -> its reader; a method not here always goes through its params model
READERS: dict[str, Callable[[Params], Any]] = {
    "session/new": read_new_session,
    "session/prompt": read_prompt,
    "session/cancel": read_session_ref,
    "session/load": read_load_session,
    "session/resume": read_resume_or_fork,
    "session/fork": read_resume_or_fork,
    "session/list": read_list_sessions,
    "session/close": read_session_ref,
    "session/delete": read_session_ref,
    "session/set_mode": read_set_mode,
    "session/set_config_option": read_set_config_option,
    "$/cancel_request": read_cancel_request,
    "authenticate": read_authenticate,
    "logout": read_logout,
}
