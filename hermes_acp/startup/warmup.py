"""Start-up work moved off the critical path: the imports a session needs, after `initialize`."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from hermes_acp.startup.collector import resume_collector

log = logging.getLogger(__name__)

SCHEMA = "acp.schema"

# What the first session/new imports; loaded by the warm-up thread after initialize.
# Not the SDK's schema (330-630 ms, +8-24 MB): plainly valid requests are read without
# it (plain_params.py); `schema_ready` imports it when one is not.
WARM_MODULES = (
    "hermes_core.agent",
    "hermes_core.store.sessions",
    "hermes_core.tools.session_search",
    "hermes_core.changes.watch",
    "hermes_acp.bridge.content",
    "hermes_acp.bridge.events",
    "hermes_acp.bridge.permissions",
    "hermes_acp.bridge.workspace",
    "hermes_acp.startup.plain_params",
    "hermes_acp.session.manager",
    "hermes_acp.session.slash.menu",
)


class Warmup:
    """Imports what the first session and the first prompt need, in a thread: the session
    modules once the initialize response is out and the input goes on (a client that only
    wanted the hello ends first: early_hello.input_ends_next), then, once a session opens,
    what a model call needs (aiohttp, ~0.15 s, and for an https endpoint the trust store,
    ~0.05 s; no provider SDK is on that path any more: core/providers/http.py). Start-up
    does not pay for them, and a prompt sent with its session/new waits only for what is
    left of them.

    Session creation waits for the module imports and a turn for the HTTP ones, so the
    main thread never imports a module the warm-up thread is half-way through.
    """

    def __init__(self) -> None:
        self.started = False
        self.modules_imported = asyncio.Event()
        # Set once the provider SDK is imported: what a turn waits for, so that it never
        # imports an SDK on the event loop. Every request that opens a session asks for it.
        self.sdks_imported = asyncio.Event()
        self._sdk_wanted = threading.Event()
        self._schema: asyncio.Future[Any] | None = None

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._run, args=(loop,), name="hermes-acp-warmup", daemon=True).start()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        threading.Thread(target=_probe_sandbox, name="hermes-acp-probe", daemon=True).start()
        try:
            for module in WARM_MODULES:
                importlib.import_module(module)
        except Exception:
            log.exception("warm-up import failed")
        finally:
            if not self._sdk_wanted.is_set():
                resume_collector()  # nothing more to import until a session opens, if one does
            _call_soon(loop, self.modules_imported.set)
        self._sdk_wanted.wait()
        try:
            _import_provider_sdk()
        except Exception:
            log.exception("warm-up of the provider SDK failed")
        finally:
            resume_collector()
            _call_soon(loop, self.sdks_imported.set)

    async def modules_ready(self) -> None:
        self.start()
        await self.modules_imported.wait()

    def want_sdk(self) -> None:
        """A session is opening: its turns will need the provider's SDK, imported once the
        session modules are in (at once, if they are)."""
        self.start()
        self._sdk_wanted.set()

    async def schema_ready(self) -> None:
        """Import the SDK's schema in a thread, the first time a request needs it: a turn
        streaming meanwhile is not held up. Requests that need it together share one import."""
        if self._schema is None:
            self._schema = asyncio.ensure_future(asyncio.to_thread(importlib.import_module, SCHEMA))
        await asyncio.shield(self._schema)  # one waiter cancelled does not cancel the import


def _probe_sandbox() -> None:
    """bwrap's once-a-process probes (a confined `true`, the cache overlays: 20-90 ms of
    waiting on children, little CPU), run beside the imports rather than inside the first
    session/new, which finds the answers cached (a session that names another bwrap
    probes that one itself)."""
    try:
        from hermes_core.sandbox.probe import bundled_bwrap, overlays_work, probe

        bwrap = bundled_bwrap()
        if bwrap is not None and probe(bwrap).ok:
            overlays_work(bwrap)
    except Exception:
        log.debug("sandbox probe in the warm-up failed", exc_info=True)


def _import_provider_sdk() -> None:
    """Import what a model call needs (aiohttp, without the trust store its import would
    load twice: core/providers/tls.py) and the module of the configured API shape, and
    load the trust store once when the configured endpoint is called over TLS: in a thread
    of its own beside aiohttp's import, since OpenSSL reads the certificates without the
    GIL (~50 ms that overlap the import instead of following it; docs/benchmarks.md)."""
    from hermes_core.config import load_settings
    from hermes_core.providers.http import needs_tls, proxy_for
    from hermes_core.providers.resolve import primary_base_url, provider_module
    from hermes_core.providers.tls import import_aiohttp

    try:
        settings = load_settings()
    except Exception:  # the session reports it; aiohttp is still wanted
        settings = None
    trust_store = None
    url = primary_base_url(settings) if settings is not None else None
    if settings is not None and needs_tls(url, url and proxy_for(url)):
        trust_store = threading.Thread(target=_load_trust_store, name="hermes-acp-trust-store", daemon=True)
        trust_store.start()
    import_aiohttp()
    if settings is not None:
        provider_module(settings)
    if trust_store is not None:
        # Done before a turn may start: a turn's client would otherwise wait on the event
        # loop for the context this thread is making.
        trust_store.join()


def _load_trust_store() -> None:
    from hermes_core.providers.tls import verified_context

    try:
        verified_context()
    except Exception:  # the endpoint's client makes it again and meets the error there
        log.exception("warm-up of the trust store failed")


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], Any]) -> None:
    # RuntimeError: the loop is gone, the server is shutting down
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback)
