"""A cold process's garbage collector is paused while it imports its way to a first model
call (hermes_acp/startup/collector.py), and always comes back: once the warm-up has
imported what a model call needs, or once it has nothing more to import until a session
opens. A collector left off would let a long session's garbage cycles pile up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import asyncio, gc, json, sys
from hermes_acp.startup import pause_collector
from hermes_acp.startup.warmup import Warmup

pause_collector()
frozen_before = gc.get_freeze_count()

async def main() -> dict:
    warmup = Warmup()
    report = {"paused": not gc.isenabled()}
    if sys.argv[1] == "session":  # a session opens while the modules are still importing
        warmup.want_sdk()
        await warmup.sdks_imported.wait()
        import aiohttp.connector
        report["trust store"] = aiohttp.connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"]
    else:  # only the hello: no session yet
        await warmup.modules_ready()
        report["sdk imported"] = "aiohttp" in sys.modules
    report["collecting"] = gc.isenabled()
    report["frozen"] = gc.get_freeze_count() > frozen_before
    return report

print(json.dumps(asyncio.run(main())))
"""


def _probe(case: str, home: Path, cert: Path) -> dict[str, object]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "HERMES_ACP_HOME": str(home / ".hermes-acp"),
        "HERMES_ACP_PROVIDER": "openai",  # its default endpoint is https: the trust store is loaded
        "SSL_CERT_FILE": str(cert),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE, case], capture_output=True, text=True, timeout=120, env=env, check=True
    )
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _certificate(tmp_path: Path) -> Path:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x"]
    subprocess.run(
        ["openssl", *request, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert


def test_the_collector_comes_back_once_what_a_model_call_needs_is_imported(tmp_path: Path) -> None:
    report = _probe("session", tmp_path, _certificate(tmp_path))
    assert report["paused"] is True
    assert report["collecting"] is True  # by the time a turn may start
    assert report["frozen"] is True  # start-up's heap is not walked again
    assert report["trust store"] == 1  # loaded beside aiohttp's import, installed as its default


def test_the_collector_comes_back_when_no_session_opens(tmp_path: Path) -> None:
    report = _probe("hello only", tmp_path, _certificate(tmp_path))
    assert report["paused"] is True
    assert report["sdk imported"] is False
    assert report["collecting"] is True
