"""The start-up layer: what makes a fresh process answer its editor sooner, behind one wall.

Two callers, each through the names below (nothing else imports a module of this package):

- the launcher (`hermes-acp --stdio`, cli.py): the first `initialize` answered before the
  server exists (`answer_first_initialize`, `input_ends_next`: early_hello.py), and a
  `session/new` right after it (`Handover.answer_session_new`: early_session.py), the ACP
  SDK imported without its package `__init__` (`defer_package_init`: sdk_import.py,
  lazy_package.py), the transport on real descriptors (`open_fd_transport`), the garbage
  collector paused until the warm-up is done (`pause_collector`: collector.py);
- the server (server.py): `Startup` (gate.py), its one door for every request: when it
  may run (the warm-up's imports, warmup.py) and its params read without the SDK's schema
  when they are plainly valid (plain_params.py, hello.py), else by the schema's models
  (schema_params.py); and the hello itself (`agent_hello`, `auth_methods`, `ClientHello`);
  a session answered early (`EarlySession`), which it builds before serving anything else.

The names are looked up lazily: the launcher imports this package before asyncio, and
answers `initialize` with only what early_hello.py needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the type checker sees them; at run time, __getattr__ below
    from hermes_acp.startup.collector import pause_collector
    from hermes_acp.startup.early_hello import (
        SHUTDOWN_SIGNALS,
        Handover,
        answer_first_initialize,
        input_ends_next,
    )
    from hermes_acp.startup.early_session import EarlySession
    from hermes_acp.startup.fd_transport import open_fd_transport
    from hermes_acp.startup.gate import Startup
    from hermes_acp.startup.hello import HELLO_MODEL, ClientHello, agent_hello, auth_methods
    from hermes_acp.startup.plain_params import (
        AuthChoice,
        ListQuery,
        ModeChange,
        NoParams,
        PlacementParams,
        PromptParams,
        RequestRef,
        SessionRef,
    )
    from hermes_acp.startup.schema_params import ParamsModel
    from hermes_acp.startup.sdk_import import defer_package_init
    from hermes_acp.startup.warmup import WARM_MODULES

_EXPORTS = {
    "answer_first_initialize": "early_hello",
    "input_ends_next": "early_hello",
    "Handover": "early_hello",
    "SHUTDOWN_SIGNALS": "early_hello",
    "EarlySession": "early_session",
    "defer_package_init": "sdk_import",
    "pause_collector": "collector",
    "WARM_MODULES": "warmup",  # what the warm server imports too (hermes_acp/warm/imports.py)
    "open_fd_transport": "fd_transport",
    "Startup": "gate",
    "HELLO_MODEL": "hello",
    "ClientHello": "hello",
    "agent_hello": "hello",
    "auth_methods": "hello",
    # what the handlers receive: params read plainly (the schema's models otherwise)
    "ParamsModel": "schema_params",
    "AuthChoice": "plain_params",
    "ListQuery": "plain_params",
    "ModeChange": "plain_params",
    "NoParams": "plain_params",
    "PlacementParams": "plain_params",
    "PromptParams": "plain_params",
    "RequestRef": "plain_params",
    "SessionRef": "plain_params",
}

__all__ = [
    "HELLO_MODEL",
    "SHUTDOWN_SIGNALS",
    "WARM_MODULES",
    "AuthChoice",
    "ClientHello",
    "EarlySession",
    "Handover",
    "ListQuery",
    "ModeChange",
    "NoParams",
    "ParamsModel",
    "PlacementParams",
    "PromptParams",
    "RequestRef",
    "SessionRef",
    "Startup",
    "agent_hello",
    "answer_first_initialize",
    "auth_methods",
    "defer_package_init",
    "input_ends_next",
    "open_fd_transport",
    "pause_collector",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_acp.startup' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hermes_acp.startup.{module}"), name)
