"""What a warm server loaded, so that it never forks stale code.

A fork runs the modules the server imported when it started: if the installation changed
since, the child would be the old agent. Recorded (stat only, no reading): every loaded
file of our own packages (edited in place, so each file counts), the folder of every other
loaded module (an installer replaces files, which changes their folder), the listing of
every folder under our packages (a module added or removed: not their mtime, which a
child's first byte-code cache changes), the import path's folders (a distribution
installed or removed), the interpreter and, when the server made a TLS context (with
aiohttp's import: warm/imports.py, core/providers/tls.py), the certificates it trusts (a
CA added or removed: a fresh process would see it).
"""

from __future__ import annotations

import os
import sys

import hermes_acp

Stamp = tuple[object, ...]
LISTING = "listing:"  # the key of a folder of ours, stamped by the names in it


def _stamp(path: str) -> Stamp | None:
    if path.startswith(LISTING):
        try:
            return tuple(sorted(n for n in os.listdir(path[len(LISTING) :]) if n != "__pycache__"))
        except OSError:
            return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def _ours() -> tuple[str, ...]:
    roots = [os.path.dirname(os.path.abspath(hermes_acp.__file__))]
    engine = sys.modules.get("hermes_core")
    engine_file = getattr(engine, "__file__", None)
    if engine_file:
        roots.append(os.path.dirname(os.path.abspath(engine_file)))
    return tuple(roots)


def loaded() -> dict[str, Stamp | None]:
    """The stamps of what this process runs, as they are now."""
    ours = _ours()
    paths = {os.path.realpath(sys.executable)}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not os.path.isabs(file):
            continue
        paths.add(file if file.startswith(ours) else os.path.dirname(file))
    for root in ours:
        for folder, dirs, _ in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            paths.add(LISTING + folder)
    paths.update(entry for entry in sys.path if os.path.isabs(entry) and os.path.isdir(entry))
    paths.update(_trust_store())
    return {path: _stamp(path) for path in paths if not path.endswith("__pycache__")}


def written_since(recorded: dict[str, Stamp | None], started_ns: int) -> list[str]:
    """Files of `recorded` written at or after `started_ns` (or gone): an edit while they
    were being imported, which the server may or may not have seen."""
    return [
        path
        for path, stamp in recorded.items()
        if stamp is None
        or (not path.startswith(LISTING) and int(str(stamp[0])) >= started_ns and os.path.isfile(path))
    ]


def changed(recorded: dict[str, Stamp | None]) -> list[str]:
    """What changed since `recorded` was taken (empty: the code is as loaded)."""
    return [path for path, stamp in recorded.items() if _stamp(path) != stamp]


def _trust_store() -> list[str]:
    """The certificate file and folder behind the TLS context every child shares (the
    server makes it with aiohttp's import: warm/imports.py), once it was made; their
    folder's stamp changes when a certificate is added or removed, the file's when it is
    rewritten."""
    if "aiohttp.connector" not in sys.modules:
        return []
    import ssl

    defaults = ssl.get_default_verify_paths()
    named = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    found = [p for p in (*named, defaults.openssl_cafile, defaults.openssl_capath) if p and os.path.exists(p)]
    return sorted({os.path.realpath(p) for p in found})
