"""The model calls go through the proxy the environment names (HTTP_PROXY, as httpx and
curl read it), and straight to a host NO_PROXY lists (core/providers/http.py `proxy_for`);
a ~/.netrc changes nothing.

The proxy is a real forwarding HTTP proxy on 127.0.0.1: it takes each request in absolute
form, notes its target, and passes it on to the fake model, one request a connection.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.acp_harness import AcpClient, server_env, spawn_server
from tests.support.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.asyncio


class ForwardingProxy:
    """Notes the request line of every request it forwards (`seen`), and the credentials
    it was given for it."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.credentials: list[str] = []  # the Proxy-Authorization headers it was sent

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, _, fields = head.decode("latin-1").partition("\r\n")
            method, target, version = request_line.split(" ")
            self.seen.append(f"{method} {target}")
            self.credentials += [
                line.split(":", 1)[1].strip()
                for line in fields.split("\r\n")
                if line.lower().startswith("proxy-authorization:")
            ]
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in fields.split("\r\n")
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            body = await reader.readexactly(length)
            url = urlsplit(target)
            upstream_reader, upstream_writer = await asyncio.open_connection(url.hostname, url.port)
            path = url.path + (f"?{url.query}" if url.query else "")
            upstream_writer.write(f"{method} {path} {version}\r\n{fields}".encode("latin-1") + body)
            await upstream_writer.drain()
            # one request a connection: the client is told so, and the rest is piped back
            answer_head = await upstream_reader.readuntil(b"\r\n\r\n")
            writer.write(answer_head[:-2] + b"connection: close\r\n\r\n")
            while data := await upstream_reader.read(65536):
                writer.write(data)
                await writer.drain()
            upstream_writer.close()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[ForwardingProxy, str]]:
    forwarding = ForwardingProxy()
    server = await asyncio.start_server(forwarding.handle, "127.0.0.1", 0)
    async with server:
        yield forwarding, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    with contextlib.suppress(Exception):
        await server.wait_closed()


async def _one_turn(env: dict[str, str], fake: FakeProvider, project: Path) -> str:
    async with spawn_server(env) as server:
        client: AcpClient = server.sdk_client()
        await client.initialize()
        session = (await client.new_session(project))["sessionId"]
        fake.script([Reply(text="Hello through the proxy.")])
        assert await client.prompt(session, "hi") == {"stopReason": "end_turn"}
        return client.text(session)


async def test_model_calls_go_through_the_proxy_the_environment_names(
    proxy: tuple[ForwardingProxy, str], fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    forwarding, proxy_url = proxy
    env = server_env(tmp_path, fake, HTTP_PROXY=proxy_url.replace("http://", "http://someone:s%40cret@"))
    assert await _one_turn(env, fake, project) == "Hello through the proxy."
    assert f"POST {fake.openai_base_url}/chat/completions" in forwarding.seen
    # the proxy URL's user and password, as the proxy reads them
    assert set(forwarding.credentials) == {"Basic " + base64.b64encode(b"someone:s@cret").decode()}


async def test_a_host_no_proxy_lists_is_called_directly(
    proxy: tuple[ForwardingProxy, str], fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    forwarding, proxy_url = proxy
    env = server_env(tmp_path, fake, HTTP_PROXY=proxy_url, NO_PROXY="localhost,127.0.0.1")
    assert await _one_turn(env, fake, project) == "Hello through the proxy."
    assert forwarding.seen == []


async def test_a_netrc_naming_the_endpoint_leaves_the_calls_as_they_are(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    # A client reading ~/.netrc for every request (aiohttp's trust_env) refuses any request
    # to a host it names, as ours carry an Authorization header; and it is not the key.
    (tmp_path / ".netrc").write_text("machine 127.0.0.1 login someone password not-the-key\n")
    env = server_env(tmp_path, fake)
    assert await _one_turn(env, fake, project) == "Hello through the proxy."
    calls = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    assert calls and all(r.headers["authorization"] == "Bearer test" for r in calls)
