"""A plain-http endpoint (a local model, the benchmarks' fake) never loads the system's
certificates; a TLS connection the same client makes (a redirect to https) is verified
all the same, through the trust store made then (core/providers/http.py `tls_for`)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from hermes_core.providers import http
from hermes_core.providers.chat_completions import ChatCompletionsProvider
from tests.support.fake_provider import FakeProvider


async def test_a_plain_http_endpoint_is_called_without_loading_the_trust_store() -> None:
    http.ssl_context.cache_clear()
    with FakeProvider() as fake:
        fake.models = ["gpt-4.1"]
        provider = ChatCompletionsProvider(
            "gpt-4.1", api_key="k", base_url=fake.url, name="openai", timeout=10, stale_seconds=5
        )
        try:
            assert "gpt-4.1" in await provider.list_models()
        finally:
            await provider.aclose()
    assert http.ssl_context.cache_info().currsize == 0


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
    """An https server on 127.0.0.1 answering every request with `ok`; yields its port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client refused our certificate
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_tls_from_a_plain_http_client_is_verified(tls_server: int) -> None:
    http.ssl_context.cache_clear()
    client = http.make_client("http://127.0.0.1:9/v1", 10, {})
    try:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(f"https://127.0.0.1:{tls_server}/")
    finally:
        await client.aclose()


async def test_tls_from_a_plain_http_client_uses_the_system_trust_store(
    tls_server: int, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # the trust store httpx2 reads
    http.ssl_context.cache_clear()
    client = http.make_client("http://127.0.0.1:9/v1", 10, {})
    try:
        response = await client.get(f"https://127.0.0.1:{tls_server}/")
        assert response.text == "ok"
    finally:
        await client.aclose()
        http.ssl_context.cache_clear()  # not the test's trust store for the next test
