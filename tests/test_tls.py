"""An https endpoint is verified against the system's trust store (core/providers/http.py:
aiohttp's default context, which honours SSL_CERT_FILE): a certificate no trust store holds
fails the call, the same certificate put in the trust store passes."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_core.providers.base import ProviderError
from hermes_core.providers.chat_completions import ChatCompletionsProvider


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 that no trust store holds."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        [
            "openssl",
            *request,
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
async def tls_server(certificate: tuple[Path, Path]) -> AsyncIterator[int]:
    """An https server on 127.0.0.1 answering every request with a model list; yields its port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            body = b'{"data": [{"id": "m1"}]}'
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client refused our certificate
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


LIST_MODELS = """
import asyncio, sys
from hermes_core.providers.chat_completions import ChatCompletionsProvider

async def main() -> None:
    provider = ChatCompletionsProvider(
        "m1", api_key="k", base_url=sys.argv[1], name="openai", timeout=10, stale_seconds=10
    )
    try:
        print(await provider.list_models())
    finally:
        await provider.aclose()

asyncio.run(main())
"""


async def test_a_certificate_no_trust_store_holds_fails_the_call(tls_server: int) -> None:
    provider = ChatCompletionsProvider(
        "m1",
        api_key="k",
        base_url=f"https://127.0.0.1:{tls_server}/v1",
        name="openai",
        timeout=10,
        stale_seconds=10,
    )
    try:
        with pytest.raises(ProviderError, match=r"(?i)certificate verify failed"):
            await provider.list_models()
    finally:
        await provider.aclose()


async def test_the_system_trust_store_is_the_one_read(
    tls_server: int, certificate: tuple[Path, Path]
) -> None:
    # a process of its own: the trust store is read once, when aiohttp is imported
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LIST_MODELS,
        f"https://127.0.0.1:{tls_server}/v1",
        env={**os.environ, "SSL_CERT_FILE": str(certificate[0])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "['m1']"


DEFAULT_CONTEXT = """
import asyncio, sys
from hermes_core.providers.tls import import_aiohttp, verified_context

aiohttp = import_aiohttp()

async def get() -> str:
    async with aiohttp.ClientSession() as session:  # aiohttp's default context, not an endpoint's
        try:
            async with session.get(sys.argv[1]) as response:
                return "ok" if response.status == 200 else str(response.status)
        except aiohttp.ClientConnectorCertificateError:
            return "refused"

async def main() -> None:
    print(await get())
    await asyncio.to_thread(verified_context)  # what an https endpoint's client makes
    print(await get())

asyncio.run(main())
"""


async def test_aiohttp_s_default_trusts_nothing_until_the_trust_store_is_loaded(
    tls_server: int, certificate: tuple[Path, Path]
) -> None:
    # aiohttp is imported without the trust store (core/providers/tls.py): a request that
    # reaches its default context before an https endpoint made ours (a plain-http endpoint
    # redirected to https) is refused, even to a certificate the trust store holds
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        DEFAULT_CONTEXT,
        f"https://127.0.0.1:{tls_server}/v1/models",
        env={**os.environ, "SSL_CERT_FILE": str(certificate[0])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().split() == ["refused", "ok"]
