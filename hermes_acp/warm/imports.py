"""What the warm server imports before it serves: everything a cold process imports on
its way to a session's first model chunk, so that a child imports (almost) nothing."""

from __future__ import annotations

import importlib

# What the cold path imports beside the warm-up's list (hermes_acp/startup/warmup.py):
# the early answers, the server, logging, the settings and the HTTP client; and what a
# session handed MCP servers imports (httpx2 and anyio: the mcp package's client).
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
    "httpx2",  # MCP over HTTP
    "hermes_acp.cli",
    # what building a session and its first turn import (measured: a child's new modules)
    "hermes_acp.session.early_build",
    "hermes_acp.session.jobs",
    "hermes_core.execution.jobs",
    "hermes_core.fence.ripgrep",  # a cold process's first listing or search imports it
    "hermes_core.policy.hooks",
    "hermes_core.policy.permission_rules",
    "hermes_core.prompt.context",
    "hermes_core.prompt.skills",
    "hermes_core.providers.model_list",
    "hermes_core.rewind.checkpoints",
    "hermes_core.sandbox.bwrap",
    "hermes_core.sandbox.probe",
    "hermes_core.store.writer",
    "hermes_core.tools.skill",
    "anyio._backends._asyncio",  # an MCP client's first stream
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "concurrent.futures.thread",
)


def import_everything() -> list[str]:
    """Import them all; what failed (a child imports it again, and meets the error there)."""
    from hermes_acp.startup import WARM_MODULES, defer_package_init

    defer_package_init()  # as the cold path: the SDK's package without its schema
    failed = []
    for module in (*MODULES, *WARM_MODULES):
        try:
            importlib.import_module(module)
        except Exception:  # a module renamed or gone: not ours to fail for
            failed.append(module)
    for step in (_http, _provider, _sandbox_probe):
        try:
            step()
        except Exception:
            failed.append(step.__name__)
    return failed


def _http() -> None:
    """The providers' HTTP (aiohttp) and its TLS context (the trust store), made once for
    every child, whatever the endpoint."""
    from hermes_core.providers.tls import import_aiohttp, verified_context

    import_aiohttp()
    verified_context()


def _provider() -> None:
    """The configured API shape's module."""
    from hermes_core.config import load_settings
    from hermes_core.providers.resolve import provider_module

    provider_module(load_settings())


def _sandbox_probe() -> None:
    """bwrap's once-a-process probes (a confined `true`, the overlays), cached for every
    child: the installation's bwrap is part of what the server checks before a fork."""
    from hermes_core.sandbox.probe import bundled_bwrap, overlays_work, probe

    bwrap = bundled_bwrap()
    if bwrap is not None and probe(bwrap).ok:
        overlays_work(bwrap)
