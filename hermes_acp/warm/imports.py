"""What the warm server imports before it serves: everything a cold process imports on
its way to a session's first model chunk, so that a child imports (almost) nothing."""

from __future__ import annotations

import importlib

# What the cold path imports beside the warm-up's list (hermes_acp/startup/warmup.py):
# the early answers, the server, logging, the settings and the HTTP client.
MODULES = (
    "asyncio",
    "hermes_acp.logs",
    "hermes_acp.startup.early_hello",
    "hermes_acp.startup.early_session",
    "hermes_acp.startup.fd_transport",
    "hermes_acp.startup.gate",
    "hermes_acp.startup.plain_params",
    "hermes_acp.server",
    "hermes_core.config",
    "hermes_core.config_plain",
    "httpx2",
)


def import_everything() -> None:
    from hermes_acp.startup import defer_package_init

    defer_package_init()  # as the cold path: the SDK's package without its schema
    for module in MODULES:
        importlib.import_module(module)
    from hermes_acp.startup import WARM_MODULES

    for module in WARM_MODULES:
        importlib.import_module(module)
    _provider()


def _provider() -> None:
    """The configured API shape's module and, for a TLS endpoint, the TLS context: made
    once here, shared by every child (the same certificates a fresh process would load)."""
    from hermes_core.config import load_settings
    from hermes_core.providers.resolve import provider_module, speaks_tls

    settings = load_settings()
    if speaks_tls(settings):
        from hermes_core.providers.http import ssl_context

        ssl_context()
    provider_module(settings)
