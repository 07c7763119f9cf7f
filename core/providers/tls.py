"""The providers' TLS context, made when an https endpoint needs it, and aiohttp imported
without the two contexts its import makes.

aiohttp's connector loads the system's trust store at import, twice: into its verified
default context and into an unverified one (which does not use it). ~50 ms of CPU each, a
tenth of a cold thread's CPU before its first chunk. We never ask for the unverified one,
and a plain-http endpoint (a local model server) needs neither: `import_aiohttp` leaves
both without certificates, and `verified_context` makes the one an https endpoint uses, as
aiohttp made it, once a process. Until it is made, aiohttp's default trusts nothing: a
request that reaches it (a plain-http endpoint redirected to https) fails, closed.
"""

from __future__ import annotations

import ssl
import sys
import threading
from types import ModuleType

_lock = threading.Lock()
_importing = threading.Lock()  # one patched import at a time: each restores what it found
_made: ssl.SSLContext | None = None
# aiohttp's default contexts were left empty by `import_aiohttp`: the verified one is ours to set.
_placeholder: ssl.SSLContext | None = None


def verified_context() -> ssl.SSLContext:
    """aiohttp's verified default: the system's trust store (honouring SSL_CERT_FILE and
    SSL_CERT_DIR), hostnames checked, HTTP/1.1 offered by ALPN. Made once a process and
    shared; blocking (it reads the certificates): call it off the event loop."""
    global _made
    with _lock:
        if _made is None:
            context = ssl.create_default_context()
            context.set_alpn_protocols(("http/1.1",))
            _made = context
        _install(_made)
        return _made


def context_made() -> bool:
    return _made is not None


def import_aiohttp() -> ModuleType:
    """aiohttp, imported (when it is not yet) without loading the trust store: the contexts
    its connector makes at import are left empty, in this thread only (another thread
    making a context meanwhile gets a real one)."""
    if "aiohttp" not in sys.modules:
        with _importing:
            if "aiohttp" not in sys.modules:
                _import_without_trust_store()
    import aiohttp

    return aiohttp


def _import_without_trust_store() -> None:
    global _placeholder
    importer = threading.get_ident()
    make_default = ssl.create_default_context
    own_paths = "set_default_verify_paths" in vars(ssl.SSLContext)
    load_paths = ssl.SSLContext.set_default_verify_paths
    made: list[ssl.SSLContext] = []

    def create_default_context(*args: object, **kwargs: object) -> ssl.SSLContext:
        if threading.get_ident() != importer:
            return make_default(*args, **kwargs)  # type: ignore[arg-type]
        empty = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, hostname checked, trusts no one
        made.append(empty)
        return empty

    def set_default_verify_paths(self: ssl.SSLContext) -> None:
        if threading.get_ident() != importer:
            load_paths(self)

    ssl.create_default_context = create_default_context
    ssl.SSLContext.set_default_verify_paths = set_default_verify_paths  # type: ignore[method-assign]
    try:
        import aiohttp  # noqa: F401
    finally:
        ssl.create_default_context = make_default
        if own_paths:
            ssl.SSLContext.set_default_verify_paths = load_paths  # type: ignore[method-assign]
        else:
            del ssl.SSLContext.set_default_verify_paths
    with _lock:
        connector = sys.modules.get("aiohttp.connector")
        verified = getattr(connector, "_SSL_CONTEXT_VERIFIED", None)
        if made and verified is made[0]:
            _placeholder = verified
            if _made is not None:
                _install(_made)


def _install(context: ssl.SSLContext) -> None:
    """`context` as aiohttp's verified default, where our import left it empty (not where
    aiohttp made its own, which is as good)."""
    connector = sys.modules.get("aiohttp.connector")
    if _placeholder is not None and getattr(connector, "_SSL_CONTEXT_VERIFIED", None) is _placeholder:
        connector._SSL_CONTEXT_VERIFIED = context  # type: ignore[union-attr]
