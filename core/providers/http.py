"""The providers' HTTP: an httpx2 client per endpoint and key, our body sent as it is, and
a non-2xx answer raised in the shape the SDKs raised it, so `errors.classify` maps it as
before (429 with retry-after, 5xx, auth, context overflow).

Why not the SDKs: we write the bodies (body.py) and read the streams (sse.py) ourselves;
what was left for them was headers, HTTP and status errors, and their import is what the
first prompt of a fresh process waited for (README, Benchmarks: openai's client ~0.3 s and
anthropic's ~1 s of CPU, httpx2 ~0.05 s over what the server has imported already). The
headers are those of the SDKs' requests that an endpoint reads: authentication, the API
version, content type; openai's organization and project from the environment, as the
SDK read them.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

OPENAI_BASE_URL = "https://api.openai.com/v1"
# What the anthropic SDK this project was built against (2.14) sends, with its key as a
# bearer token: the same requests as before the SDK left the path.
ANTHROPIC_VERSION = "2026-10-21"
USER_AGENT = "hermes-acp"
MAX_CONNECTIONS = 1000  # the SDKs' pool limits
MAX_KEEPALIVE = 100


@functools.cache
def ssl_context() -> Any:
    """httpx2's default TLS context (the system's certificates: ~50 ms of disk and CPU), made
    once a process; the warm-up makes it before the first prompt needs it."""
    import httpx2

    return httpx2.create_ssl_context()


def tls_for(base_url: str) -> Any:
    """The TLS context of a client for `base_url`. A plain-http endpoint (a local model)
    gets one that loads the system's certificates only if a connection ever needs TLS
    (a redirect to https): verified all the same, but a process that never speaks TLS
    never pays for the trust store."""
    if base_url.lower().startswith("http://"):
        return _tls_on_demand()
    return ssl_context()


@functools.cache
def _tls_on_demand() -> Any:
    import ssl

    class TlsOnDemand(ssl.SSLContext):
        """Hands each TLS connection to `ssl_context()`, made on the first one."""

        def set_alpn_protocols(self, protocols: Any) -> None:
            ssl_context().set_alpn_protocols(protocols)

        def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
            return ssl_context().wrap_socket(*args, **kwargs)

        def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
            return ssl_context().wrap_bio(*args, **kwargs)

    return TlsOnDemand(ssl.PROTOCOL_TLS_CLIENT)


def make_client(base_url: str, timeout: float, headers: dict[str, str]) -> Any:
    """An httpx2 client as the SDKs made theirs (blocking: call off the event loop)."""
    import httpx2

    return httpx2.AsyncClient(
        base_url=base_url,
        headers={"accept": "application/json", "content-type": "application/json", "user-agent": USER_AGENT}
        | headers,
        timeout=httpx2.Timeout(timeout),
        limits=httpx2.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE),
        follow_redirects=True,
        verify=tls_for(base_url),
    )


def openai_headers(api_key: str) -> dict[str, str]:
    headers = {"authorization": f"Bearer {api_key}"}
    if organization := os.environ.get("OPENAI_ORG_ID"):
        headers["openai-organization"] = organization
    if project := os.environ.get("OPENAI_PROJECT_ID"):
        headers["openai-project"] = project
    return headers


def anthropic_headers(api_key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}", "anthropic-version": ANTHROPIC_VERSION}


class HttpStatusError(Exception):
    """A non-2xx answer: its status, response (headers) and body, read by `classify` as
    it read the SDKs' `APIStatusError` (the body's error message, code and type)."""

    def __init__(self, response: Any, text: str) -> None:
        self.status_code: int = response.status_code
        self.response = response
        text = text.strip()
        try:
            self.body: Any = json.loads(text)
            self.message = f"Error code: {self.status_code} - {self.body}"
        except ValueError:
            self.body = text
            self.message = text or f"Error code: {self.status_code}"
        super().__init__(self.message)


async def checked(response: Any) -> Any:
    """`response` when its status is a success; else its body is read, the response
    closed, and HttpStatusError raised."""
    if response.status_code < 400:
        return response
    try:
        text = (await response.aread()).decode("utf-8", "replace")
    finally:
        await response.aclose()
    raise HttpStatusError(response, text)


async def post_stream(client: Any, path: str, body: bytes) -> Any:
    """POST `body` to `path`; the response once its headers arrived (a success)."""
    request = client.build_request("POST", path, content=body)
    return await checked(await client.send(request, stream=True))


async def model_ids(client: Any, path: str) -> list[str]:
    """The ids of a model list, following Anthropic's pages (`has_more`, `last_id`)."""
    ids: list[str] = []
    params: dict[str, str] = {}
    while True:
        response = await checked(await client.get(path, params=params))
        page = response.json()
        ids += [item["id"] for item in page.get("data") or () if isinstance(item, dict) and "id" in item]
        if not (page.get("has_more") and page.get("last_id")):
            return ids
        params = {"after_id": str(page["last_id"])}
