"""A `session/new` sent right after the early `initialize`, answered before the server exists.

Why: Zed and other editors send `session/new` the moment `initialize` is answered, and
the server that would answer it first imports the engine, pydantic and the ACP SDK
(~0.5 s). The answer itself needs none of them: a new id, the modes and the options,
all known from the settings. So when the line after the early hello is already there
(or arrives while the server is imported: early_hello.input_ends_next), and it is a
plainly valid `session/new`, it is answered here with the stdlib `json`, as the same
bytes the server would write (option_wire.py is the one table both use).

Anything unusual is declined and left for the server, which answers it as it always has:
MCP servers (they start with the session and may fail it), a cwd or additional directory
that is not an absolute existing directory, params or a message with other keys, settings
the plain reader declines (core/config_plain.py), no credentials in plain sight (the
server answers the auth error), a model-list cache it cannot read, a shutdown signal, an
input that ended.

The session itself is built by the server (`EarlySession` in the handover), which
stores it before it serves any other request: the record holds what only the built
agent knows (its system prompt, tools), and one writer keeps one schema. Until then
every request waits for that build; a build that fails is the error of the first
request naming the session.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from hermes_acp.startup.fd_write import write_all
from hermes_acp.startup.hello import ClientHello, plain_request
from hermes_acp.wire import encode

_PARAM_KEYS = frozenset({"cwd", "mcpServers", "additionalDirectories"})
_NESTING_LIMIT = 64
# Settings' defaults for what the answer shows (core/config.py `Settings`; the e2e test
# compares this answer with the server's for several settings, the defaults among them).
_KEY_OF = {
    "openai": "openai_api_key",
    "openai-responses": "openai_api_key",
    "anthropic": "anthropic_api_key",
    "openrouter": "openrouter_api_key",
}


class EarlySession(NamedTuple):
    """A session answered here: the server builds it before it serves anything else."""

    session_id: str
    cwd: str
    extra_dirs: list[str]
    answer: dict[str, Any]  # the result sent: the built session is checked against it


class _Endpoint(NamedTuple):
    """The settings that name the endpoint's cached model list (model_list.Endpoint)."""

    home: Any
    provider: str
    base_url: str | None
    openai_base_url: str | None
    anthropic_base_url: str | None
    bedrock_region: str | None


def answer_session_new(
    write_fd: int, unread: bytes, hello: ClientHello, tracer: Any = None, environ: Any = None
) -> tuple[EarlySession, bytes] | None:
    """When the first line of `unread` is a plainly valid `session/new`: answer it on
    `write_fd`; the session and what is left of `unread`. None (nothing written) otherwise."""
    newline = unread.find(b"\n")
    if newline < 0:
        return None
    message = _session_new_request(unread[:newline])
    if message is None:
        return None
    params = message["params"]
    environ = os.environ if environ is None else environ
    state = _fresh_state(environ, hello)
    if state is None:
        return None
    session_id = os.urandom(16).hex()  # as secrets.token_hex(16), without importing it
    answer = {"sessionId": session_id, **state}
    response = {"jsonrpc": "2.0", "id": message["id"], "result": answer}
    if tracer is not None:
        tracer.incoming(message)
    write_all(write_fd, encode(response))  # OSError: the caller hands the line to the server
    if tracer is not None:
        tracer.outgoing(response)
    session = EarlySession(session_id, params["cwd"], list(params.get("additionalDirectories") or []), answer)
    return session, unread[newline + 1 :]


def _session_new_request(line: bytes) -> dict[str, Any] | None:
    message = plain_request(line, "session/new")
    if message is None:
        return None
    params = message.get("params")
    if type(params) is not dict or not params.keys() <= _PARAM_KEYS:
        return None
    if params.get("mcpServers") != [] or type(params.get("mcpServers")) is not list:
        return None
    extra = params.get("additionalDirectories", [])
    if type(extra) is not list or not all(_plain_directory(path) for path in [params.get("cwd"), *extra]):
        return None
    return message


def _plain_directory(path: Any) -> bool:
    """An absolute path of an existing directory (factory.check_directories' rule)."""
    if type(path) is not str:
        return False
    try:
        return os.path.isabs(path) and os.path.isdir(path)
    except ValueError:  # a NUL in the path: the server says what is wrong
        return False


def _fresh_state(environ: Any, hello: ClientHello) -> dict[str, Any] | None:
    """`modes` and `configOptions` of a session fresh from the settings, as the server's
    `SessionControls.session_state` gives them; None when the settings are not plainly
    valid or the credentials not plainly there."""
    from hermes_core.config_plain import (
        DEFAULT_AUTO_COMPACT,
        DEFAULT_MODE,
        DEFAULT_MODEL,
        DEFAULT_PROVIDER,
        ENV_PREFIX,
        plain_values,
    )

    values = plain_values(environ)
    if values is None:
        return None
    settings = {
        "provider": DEFAULT_PROVIDER,
        "model": DEFAULT_MODEL,
        "default_mode": DEFAULT_MODE,
        "auto_compact": DEFAULT_AUTO_COMPACT,
        **values,
    }
    if not _has_credentials(settings):
        return None
    from pathlib import Path

    from hermes_acp.session.option_wire import OptionState, model_takes_effort, session_state
    from hermes_core.providers.model_list import cached_models

    home = Path(environ.get(ENV_PREFIX + "HOME") or "~/.hermes-acp").expanduser()
    endpoint = _Endpoint(
        home,
        settings["provider"],
        settings.get("base_url"),
        settings.get("openai_base_url"),
        settings.get("anthropic_base_url"),
        settings.get("bedrock_region"),
    )
    model = settings["model"]
    auto_compact = settings["auto_compact"]
    state = OptionState(
        mode=settings["default_mode"],
        model=model,
        reasoning_effort=settings.get("reasoning_effort"),
        models=[model, *settings.get("models", []), *cached_models(endpoint)],
        reasoning=model_takes_effort(model),
        auto_compact=auto_compact if hello.boolean_options else None,
    )
    return session_state(state)


def _has_credentials(values: dict[str, Any]) -> bool:
    """Credentials in plain sight (a subset of providers.resolve.has_credentials: when
    this says yes, so does it); anything else goes to the server, which decides."""
    provider = values["provider"]
    if values.get("api_key"):
        return True
    key = _KEY_OF.get(provider)
    if key is not None:
        return bool(values.get(key))
    return provider == "custom" and bool(values.get("base_url"))
