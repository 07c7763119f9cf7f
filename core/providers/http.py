"""The providers' HTTP: an aiohttp session per endpoint and key, our body sent as it is, and
a non-2xx answer raised in the shape the SDKs raised it, so `errors.classify` maps it as
before (429 with retry-after, 5xx, auth, context overflow).

Why not the SDKs: we write the bodies (body.py) and read the streams (sse.py) ourselves;
what was left for them was headers, HTTP and status errors, and their import is what the
first prompt of a fresh process waited for (README, Benchmarks). The headers are those of
the SDKs' requests that an endpoint reads: authentication, the API version, content type;
openai's organization and project from the environment, as the SDK read them.

Why aiohttp and not httpx2 (which the SDKs use): with fifty sessions at once, httpx2 and
its pool were a third of the event loop's time; aiohttp spends 0.4x its CPU on the same
streamed POST (README, Benchmarks: "Fifty sessions at once").
"""

from __future__ import annotations

import base64
import json
import os
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

OPENAI_BASE_URL = "https://api.openai.com/v1"
# What the anthropic SDK this project was built against (2.14) sends, with its key as a
# bearer token: the same requests as before the SDK left the path.
ANTHROPIC_VERSION = "2026-10-21"
USER_AGENT = "hermes-acp"
MAX_CONNECTIONS = 1000  # the SDKs' pool limit
KEEPALIVE_SECONDS = 5.0  # how long an idle connection is kept (the SDKs' httpx: 5 s)


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, in
    either case; none for a host NO_PROXY lists), as httpx and curl read them.

    Read once per client rather than by aiohttp's `trust_env`, which looks the proxy up and
    reads ~/.netrc in a worker thread on every request (two thread hops a model call), and
    which refuses any request to a host the netrc names, since ours carry an Authorization
    header."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(scheme.lower()) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def needs_tls(base_url: str | None, proxy: str | None) -> bool:
    """Whether calling `base_url` (the API shape's default when None), through `proxy`,
    opens a TLS connection: anything but plain http to a plain-http proxy or none."""
    plain = (base_url or "").lower().startswith("http://")
    return not plain or (proxy or "").lower().startswith("https://")


def _proxy_and_credentials(proxy: str | None) -> tuple[Any, str | None]:
    """The proxy's URL without its user and password, and those as a Proxy-Authorization
    value (aiohttp sends none for a proxy URL's credentials, and deprecates `proxy_auth`)."""
    if proxy is None:
        return None, None
    from yarl import URL

    url = URL(proxy)
    if url.user is None:
        return url, None
    pair = f"{url.user}:{url.password or ''}".encode()
    return url.with_user(None), f"Basic {base64.b64encode(pair).decode('ascii')}"


class Response:
    """A response whose headers arrived: its status, headers and body (read as it comes)."""

    __slots__ = ("_raw", "headers", "status_code")

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.status_code: int = raw.status
        self.headers: Mapping[str, str] = raw.headers

    def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (decompressed), everything read so far at once."""
        return aiter(self._raw.content.iter_any())

    async def read(self) -> bytes:
        body: bytes = await self._raw.read()
        return body

    async def aclose(self) -> None:
        """Done with it: its connection goes back to the pool when the body was read to
        its end, and is closed otherwise."""
        self._raw.release()


class Client:
    """One endpoint's connection pool, with its headers, timeouts and proxy.

    Made in a worker thread (importing aiohttp and loading the trust store are blocking
    work); its aiohttp session is made on the event loop at the first request, since a
    session belongs to a loop."""

    def __init__(self, base_url: str, timeout: float, headers: dict[str, str]) -> None:
        from yarl import URL

        from hermes_core.providers.tls import import_aiohttp, verified_context

        aiohttp = import_aiohttp()

        self._url = URL
        self._base = base_url.rstrip("/")
        self._urls: dict[str, Any] = {}
        self._headers = {
            "accept": "application/json",
            "content-type": "application/json",
            "user-agent": USER_AGENT,
        } | headers
        # No total: a long answer streams for as long as it takes; each read waits `timeout`.
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=timeout, sock_connect=timeout, sock_read=timeout
        )
        proxy = proxy_for(base_url)
        self._proxy, credentials = _proxy_and_credentials(proxy)
        # TLS: the system's trust store (tls.py), for an https endpoint or proxy; a plain-http
        # one leaves aiohttp's default, which trusts nothing until such a context is made.
        self._ssl: Any = verified_context() if needs_tls(base_url, proxy) else True
        # A proxy's credentials: on a plain-http request, which the proxy forwards, in its
        # headers; for TLS, on the CONNECT that opens the tunnel (aiohttp's proxy_headers).
        self._proxy_headers = None
        if credentials is not None:
            if base_url.lower().startswith("http://"):
                self._headers["proxy-authorization"] = credentials
            else:
                self._proxy_headers = {"proxy-authorization": credentials}
        self._session: Any = None
        self._closed = False

    @property
    def is_closed(self) -> bool:
        """Closed by its last user: its connections are gone and it takes no request."""
        return self._closed

    def _open(self) -> Any:
        session = self._session
        if session is None:
            if self._closed:
                raise RuntimeError("the client has been closed")  # as httpx's did
            session = self._session = self._new_session()
        return session

    def _new_session(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=MAX_CONNECTIONS, keepalive_timeout=KEEPALIVE_SECONDS, ssl=self._ssl
        )
        # No default headers: aiohttp builds a proxy's CONNECT from them, and would send
        # our Authorization (the API key) to the proxy as its Proxy-Authorization.
        return aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            proxy=self._proxy,
            trust_env=False,  # proxy_for says why
        )

    def url(self, path: str) -> Any:
        """`path` under the base URL, its path kept (`…/v1` + `/models` -> `…/v1/models`)."""
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = self._url(f"{self._base}/{path.lstrip('/')}")
        return url

    async def post(self, path: str, body: bytes) -> Response:
        session = self._open()
        raw = await session.post(
            self.url(path), data=body, headers=self._headers, proxy_headers=self._proxy_headers
        )
        return Response(raw)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Response:
        url = self.url(path)
        if params:
            url = url.update_query(params)
        session = self._open()
        return Response(await session.get(url, headers=self._headers, proxy_headers=self._proxy_headers))

    async def aclose(self) -> None:
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def make_client(base_url: str, timeout: float, headers: dict[str, str]) -> Client:
    """The client of an endpoint (blocking: call off the event loop)."""
    return Client(base_url, timeout, headers)


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


async def checked(response: Response) -> Response:
    """`response` when its status is a success; else its body is read, the response
    closed, and HttpStatusError raised."""
    if response.status_code < 400:
        return response
    try:
        text = (await response.read()).decode("utf-8", "replace")
    finally:
        await response.aclose()
    raise HttpStatusError(response, text)


async def post_stream(client: Client, path: str, body: bytes) -> Response:
    """POST `body` to `path`; the response once its headers arrived (a success)."""
    return await checked(await client.post(path, body))


async def model_ids(client: Client, path: str) -> list[str]:
    """The ids of a model list, following Anthropic's pages (`has_more`, `last_id`)."""
    ids: list[str] = []
    params: dict[str, str] = {}
    while True:
        response = await checked(await client.get(path, params))
        try:
            page = json.loads(await response.read())
        finally:
            await response.aclose()
        ids += [item["id"] for item in page.get("data") or () if isinstance(item, dict) and "id" in item]
        if not (page.get("has_more") and page.get("last_id")):
            return ids
        params = {"after_id": str(page["last_id"])}
