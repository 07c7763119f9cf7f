"""`initialize`: the client's hello, read without the SDK's schema when it is plainly
valid, and the agent's answer (its capabilities and ways to authenticate).

`initialize` is answered before the SDK's schema is imported (sdk_import.py):
it keeps only a few capability flags and the client's name. `read_initialize` reads
them straight from params that the schema's `InitializeRequest` would accept with the
very same values: known camelCase keys only, JSON booleans where booleans go, objects
where objects go. Anything else (a string for a boolean, which pydantic coerces; a
snake_case alias; an unknown or malformed capability, which the SDK may salvage into
defaults for the whole object) goes through the schema model as before. So the fast
path never decides differently, only sooner; `tests/test_hello.py` holds both readings
to the same answers.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

PROTOCOL_VERSION = 1
MAX_PROTOCOL_VERSION = 65535  # the schema's bound (a u16)
ENV_AUTH = "env"
SETUP_AUTH = "setup"
# The flag that announced terminal auth before `clientCapabilities.auth.terminal` existed; Zed
# and the ACP registry's validator (which lists only agents offering a terminal or agent
# method) still send it, so either one gets the `setup` method.
TERMINAL_AUTH_META = "terminal-auth"

# key -> the keys its object may have; None: a leaf read by `_plain_leaf`
_META = "_meta"
_EMPTY: dict[str, Any] = {_META: None}
_SHAPE: dict[str, Any] = {
    "fs": {"readTextFile": bool, "writeTextFile": bool, _META: None},
    "terminal": bool,
    "auth": {"terminal": bool, _META: None},
    "session": {"configOptions": {"boolean": _EMPTY, _META: None}, _META: None},
    "elicitation": {"form": _EMPTY, "url": _EMPTY, _META: None},
    _META: None,
}
_CLIENT_INFO = {"name": str, "version": str, "title": str, _META: None}
_TOP = frozenset({"protocolVersion", "clientCapabilities", "clientInfo", _META})


class ClientHello(NamedTuple):
    """What `initialize` keeps from its params. (A NamedTuple: a dataclass would import
    `inspect` before the early answer, ~5 ms.)"""

    protocol_version: int
    client_name: str | None = None
    read_file: bool = False
    write_file: bool = False
    terminal: bool = False
    terminal_auth: bool = False
    terminal_meta: bool = False  # Zed's `_meta.terminal_output` convention
    boolean_options: bool = False
    elicitation_form: bool = False
    prompt_usage: bool = False  # `_meta.hermes.promptUsage`: the draft `usage` field, not `_meta`

    @classmethod
    def from_request(cls, request: Any) -> ClientHello:
        """From the SDK's validated `InitializeRequest` (read as the server always has)."""
        from acp.schema import ClientCapabilities

        caps = request.client_capabilities or ClientCapabilities()
        fs = caps.fs
        meta = caps.field_meta or {}
        configs = caps.session.config_options if caps.session else None
        return cls(
            protocol_version=request.protocol_version,
            client_name=request.client_info.name if request.client_info else None,
            read_file=bool(fs and fs.read_text_file),
            write_file=bool(fs and fs.write_text_file),
            terminal=bool(caps.terminal),
            terminal_auth=bool(caps.auth and caps.auth.terminal) or meta.get(TERMINAL_AUTH_META) is True,
            terminal_meta=meta.get("terminal_output") is True,
            boolean_options=bool(configs and configs.boolean is not None),
            elicitation_form=bool(caps.elicitation and caps.elicitation.form is not None),
            prompt_usage=_asks_prompt_usage(meta),
        )


HELLO_MODEL = "InitializeRequest"  # the method table's params model for `initialize`


def initialize_model(params: dict[str, Any]) -> type[InitializeParams]:
    """The SDK's model turns any protocolVersion into an int; the spec says it is one."""
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int):
        from acp.exceptions import RequestError

        from hermes_acp.session.errors import INVALID_PARAMS

        message = f"must be an integer (this agent speaks {PROTOCOL_VERSION})"
        raise RequestError(
            INVALID_PARAMS,
            f"Invalid params: protocolVersion: {message}",
            {"errors": [{"field": "protocolVersion", "message": message}], "fields": ["protocolVersion"]},
        )
    return InitializeParams


class InitializeParams:
    """The params model of `initialize` in the method table (see schema_params.parse_params)."""

    @staticmethod
    def model_validate(params: dict[str, Any]) -> ClientHello:
        if is_plain(params):
            return read_plain(params)
        from acp.schema import InitializeRequest

        return ClientHello.from_request(InitializeRequest.model_validate(params))


def read_plain(params: dict[str, Any]) -> ClientHello:
    """The hello in params that `is_plain` accepted."""
    caps = params.get("clientCapabilities") or {}
    fs = caps.get("fs") or {}
    auth = caps.get("auth") or {}
    configs = (caps.get("session") or {}).get("configOptions") or {}
    elicitation = caps.get("elicitation") or {}
    meta = caps.get(_META) or {}
    info = params.get("clientInfo")
    return ClientHello(
        protocol_version=params["protocolVersion"],
        client_name=info["name"] if info else None,
        read_file=fs.get("readTextFile") is True,
        write_file=fs.get("writeTextFile") is True,
        terminal=caps.get("terminal") is True,
        terminal_auth=auth.get("terminal") is True or meta.get(TERMINAL_AUTH_META) is True,
        terminal_meta=meta.get("terminal_output") is True,
        boolean_options=configs.get("boolean") is not None,
        elicitation_form=elicitation.get("form") is not None,
        prompt_usage=_asks_prompt_usage(caps.get(_META)),
    )


def _asks_prompt_usage(meta: Any) -> bool:
    hermes = meta.get("hermes") if isinstance(meta, dict) else None
    return isinstance(hermes, dict) and hermes.get("promptUsage") is True


def is_plain(params: dict[str, Any]) -> bool:
    """Whether the schema would take `params` as they are, with nothing coerced or salvaged."""
    version = params.get("protocolVersion")
    if type(version) is not int or not 0 <= version <= MAX_PROTOCOL_VERSION:
        return False
    if not params.keys() <= _TOP or not _meta_ok(params.get(_META)):
        return False
    info = params.get("clientInfo")
    if info is not None and not (
        _fits(info, _CLIENT_INFO)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    ):
        return False
    caps = params.get("clientCapabilities")
    return caps is None or _fits(caps, _SHAPE)


def _fits(value: Any, shape: dict[str, Any]) -> bool:
    """`value` is an object with only the keys of `shape`, each null or of its shape."""
    if not isinstance(value, dict) or not value.keys() <= shape.keys():
        return False
    for key, child in value.items():
        expected = shape[key]
        if child is None:
            continue
        if expected is None:  # `_meta`: any object
            if not isinstance(child, dict):
                return False
        elif isinstance(expected, dict):
            if not _fits(child, expected):
                return False
        elif type(child) is not expected:
            return False
    return True


def _meta_ok(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def agent_hello(version: str, *, terminal_auth: bool) -> dict[str, Any]:
    """The initialize answer: what this agent offers, whoever the client is."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "auth": {"logout": {}},
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            # fork is in the unstable schema only; clients that do not know it ignore it
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "fork": {},
                "additionalDirectories": {},
            },
            # Extension methods: `_hermes/rewind` lists a session's prompts or goes back to one.
            "_meta": {"hermes": {"rewind": {"method": "_hermes/rewind"}}},
        },
        "authMethods": auth_methods(terminal_auth=terminal_auth),
        "agentInfo": {"name": "hermes-acp", "title": "Hermes", "version": version},
    }


def auth_methods(*, terminal_auth: bool) -> list[dict[str, Any]]:
    """The environment's keys always; `hermes-acp setup` in a terminal where the client can run one."""
    methods: list[dict[str, Any]] = [
        {
            "id": ENV_AUTH,
            "name": "API key from environment or config file",
            "description": (
                "Reads OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY (or HERMES_ACP_API_KEY "
                "with HERMES_ACP_BASE_URL) from the environment, or the keys in "
                "~/.hermes-acp/config.toml (HERMES_ACP_HOME) written by `hermes-acp setup`."
            ),
        }
    ]
    if terminal_auth:
        methods.append(
            {
                "type": "terminal",
                "id": SETUP_AUTH,
                "name": "Set up hermes-acp in a terminal",
                "description": "Choose a provider, enter an API key and a model; writes config.toml.",
                "args": ["setup"],
            }
        )
    return methods


_MESSAGE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})


def plain_request(line: bytes, method: str) -> dict[str, Any] | None:
    """The request on `line` when it is a `method` request with an id and nothing but the
    JSON-RPC keys (read as transport.py reads a line); None for anything else."""
    try:
        message = json.loads(line.strip().decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if (
        type(message) is dict
        and message.keys() <= _MESSAGE_KEYS
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == method
        and type(message.get("id")) in (str, int)
    ):
        return message
    return None
