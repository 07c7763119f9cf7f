"""Amazon Bedrock's Converse API (`converse_stream`) through boto3.

boto3 is an optional extra (`hermes-acp-agent[bedrock]`), imported on the first call. Region,
profile and credentials come from the usual AWS sources (AWS_REGION / AWS_PROFILE /
access keys / shared config / instance roles); `bedrock_region` and `bedrock_profile`
settings override them. boto3 is synchronous: its stream is read in a thread of its own
and handed to the event loop through a queue; closing or cancelling the consumer closes
the HTTP stream, which ends the thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from hermes_core.events import TextDelta, ThoughtDelta
from hermes_core.models import Usage, model_info
from hermes_core.providers import base
from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError
from hermes_core.providers.bedrock_messages import to_converse_messages
from hermes_core.providers.errors import from_status, with_hints
from hermes_core.providers.sdk import SdkProvider, clean

log = logging.getLogger(__name__)

_FINISH: dict[str, base.FinishReason] = {
    **base.CLAUDE_FINISH,
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
}
# Error codes botocore reports, by what they mean here.
_THROTTLED = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "TooManyRequestsException",
}
_TRANSIENT = {
    "InternalServerException",
    "ModelStreamErrorException",
    "ModelTimeoutException",
    "ServiceException",
}
_AUTH = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "ExpiredTokenException",
    "InvalidSignatureException",
    "NoCredentialsError",
    "PartialCredentialsError",
}
_CONNECTION = {
    "EndpointConnectionError",
    "ConnectionClosedError",
    "ConnectTimeoutError",
    "ProtocolError",
    "ResponseStreamingError",
}
_END = object()


class BedrockConverseProvider(SdkProvider):
    """The SDK is boto3, with a client per AWS service; AWS credentials come from the AWS
    sources, never from a key pool."""

    api_mode = "bedrock_converse"

    def __init__(
        self, model: str, *, region: str | None = None, profile: str | None = None, **endpoint: Any
    ) -> None:
        super().__init__(model, **{"api_key": None, **endpoint, "api_keys": None})
        self.region = region
        self.profile = profile
        self._clients: dict[str, Any] = {}

    # -- clients ---------------------------------------------------------------------

    async def client(self, service: str = "bedrock-runtime") -> Any:
        if service not in self._clients:
            made = await asyncio.to_thread(self._make_service_client, service)
            self._clients.setdefault(service, made)
        return self._clients[service]

    def _make_service_client(self, service: str) -> Any:
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:
            raise ProviderError(
                ErrorKind.FATAL,
                "Bedrock needs boto3: install it with `pip install 'hermes-acp-agent[bedrock]'`",
                provider=self.name,
            ) from exc
        try:
            # botocore itself reads AWS_DEFAULT_REGION and the profile's region, not the
            # AWS_REGION the other AWS SDKs read.
            region = self.region or os.environ.get("AWS_REGION") or None
            session = boto3.Session(profile_name=self.profile, region_name=region)
            config = Config(
                retries={"total_max_attempts": 1, "mode": "standard"},  # we retry ourselves
                # A backstop only: the stale watch in `stream` decides first, and closing
                # the stream ends the reader thread; this ends one still waiting for headers.
                read_timeout=self.stale_seconds * 2 + 5,
                connect_timeout=min(self.timeout, 60),
                user_agent_extra="hermes-acp",
            )
            return session.client(service, endpoint_url=self.base_url, config=config)
        except Exception as exc:
            raise classify_aws(exc, provider=self.name) from exc

    # -- the call ----------------------------------------------------------------------

    def params(self, request: ModelRequest) -> dict[str, Any]:
        info = model_info(self.model)
        max_tokens = request.max_output_tokens or info.default_output_tokens
        params: dict[str, Any] = {"modelId": self.model, "inferenceConfig": {"maxTokens": max_tokens}}
        if request.system:
            params["system"] = [{"text": request.system}]
        if request.tools:
            params["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": t.name,
                            "description": t.description,
                            "inputSchema": {"json": t.parameters},
                        }
                    }
                    for t in request.tools
                ]
            }
        budget = base.thinking_budget(request.reasoning_effort, info.reasoning, max_tokens)
        if budget is not None:
            params["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": budget}
            }
        # The history comes cleaned from its kept wire forms; a walk over it here would
        # cost O(history) on every call.
        cleaned = clean(params)
        messages = to_converse_messages(request.messages)
        return {"modelId": cleaned["modelId"], "messages": messages, **cleaned}  # the order boto3 sends

    async def stream(self, request: ModelRequest) -> AsyncGenerator[base.StreamItem, None]:
        client = await self.client()
        reader = _StreamReader(client, self.params(request), provider=self.name)
        blocks: dict[int, _Block] = {}
        stop_reason: str | None = None
        usage: dict[str, int] = {}
        try:
            reader.start()
            while True:
                event = await reader.next(self.stale_seconds)
                if event is _END:
                    break
                if delta := event.get("contentBlockDelta"):
                    index = delta.get("contentBlockIndex", 0)
                    item = blocks.setdefault(index, _Block()).apply(delta.get("delta") or {})
                    if item is not None:
                        yield item
                elif start := event.get("contentBlockStart"):
                    tool = (start.get("start") or {}).get("toolUse")
                    if tool:
                        blocks[start.get("contentBlockIndex", 0)] = _Block(
                            "tool_use", id=tool.get("toolUseId", ""), name=tool.get("name", "")
                        )
                elif stop := event.get("messageStop"):
                    stop_reason = stop.get("stopReason")
                elif metadata := event.get("metadata"):
                    usage.update(
                        {k: v for k, v in (metadata.get("usage") or {}).items() if isinstance(v, int)}
                    )
        finally:
            reader.close()
        if stop_reason is None:
            raise ProviderError(
                ErrorKind.TRANSIENT, "the stream ended before messageStop", provider=self.name
            )
        yield _response(blocks, stop_reason, usage, self.model)

    async def list_models(self) -> list[str]:
        """The foundation models the account can see (Bedrock's control plane)."""
        client = await self.client("bedrock")
        try:
            answer = await asyncio.to_thread(client.list_foundation_models)
        except Exception as exc:
            error = classify_aws(exc, provider=self.name)
            if error.kind is ErrorKind.AUTH and error.status == 403:
                # Listing needs its own IAM permission; calling the model may still work.
                raise ProviderError(
                    ErrorKind.BAD_REQUEST, f"the model list is not permitted: {error}", provider=self.name
                ) from exc
            raise error from exc
        return [s["modelId"] for s in answer.get("modelSummaries", []) if s.get("modelId")]

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            with contextlib.suppress(Exception):  # closing is best effort
                client.close()


class _StreamReader:
    """Runs `converse_stream` and its event loop in a daemon thread; events reach the
    asyncio side through a queue. `close()` closes the HTTP stream, ending the thread."""

    def __init__(self, client: Any, params: dict[str, Any], *, provider: str) -> None:
        self.client = client
        self.params = params
        self.provider = provider
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.closed = threading.Event()
        self.stream: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._pump, name="bedrock-stream", daemon=True).start()

    def _put(self, kind: str, value: Any) -> None:
        if self.closed.is_set():
            return
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))

    def _pump(self) -> None:
        try:
            response = self.client.converse_stream(**self.params)
            with self._lock:
                self.stream = response["stream"]
            if self.closed.is_set():
                return
            for event in self.stream:
                if self.closed.is_set():
                    return
                self._put("event", event)
            self._put("end", None)
        except BaseException as exc:  # handed to the loop, which raises it as a ProviderError
            self._put("error", exc)
        finally:
            self._close_stream()

    async def next(self, stale_seconds: float) -> Any:
        try:
            kind, value = await asyncio.wait_for(self.queue.get(), stale_seconds)
        except TimeoutError as exc:
            raise ProviderError(
                ErrorKind.STALE, f"no data for {stale_seconds:g}s: the stream stalled", provider=self.provider
            ) from exc
        if kind == "error":
            raise classify_aws(value, provider=self.provider) from value
        return _END if kind == "end" else value

    def close(self) -> None:
        self.closed.set()
        self._close_stream()

    def _close_stream(self) -> None:
        with self._lock:
            stream, self.stream = self.stream, None
        if stream is not None:
            with contextlib.suppress(Exception):  # an already-broken connection
                stream.close()


@dataclass(slots=True)
class _Block(base.StreamedBlock):  # type: "text" | "reasoning" | "tool_use"
    signature: str = ""
    redacted: str = ""  # base64 of redacted reasoning, replayed as it came

    def apply(self, delta: dict[str, Any]) -> TextDelta | ThoughtDelta | None:
        if "text" in delta:
            text = delta["text"] or ""
            self.pieces.append(text)
            return TextDelta(text) if text else None
        if reasoning := delta.get("reasoningContent"):
            self.type = "reasoning"
            if text := reasoning.get("text"):
                self.pieces.append(text)
                return ThoughtDelta(text)
            if signature := reasoning.get("signature"):
                self.signature += signature
            if redacted := reasoning.get("redactedContent"):
                self.redacted = base64.b64encode(redacted).decode()
            return None
        if tool := delta.get("toolUse"):
            self.type = "tool_use"
            self.pieces.append(tool.get("input") or "")
        return None

    def replayed(self) -> dict[str, Any]:
        """The reasoning block as the next request must send it back."""
        if self.redacted:
            return {"redactedContent": self.redacted}
        return {"reasoningText": {"text": self.text, "signature": self.signature}}


def _response(
    blocks: dict[int, _Block], stop_reason: str, usage: dict[str, int], model: str
) -> ModelResponse:
    return base.response_from_blocks(
        blocks,
        finish=_FINISH.get(stop_reason, "stop"),
        thought_type="reasoning",
        replayed_types=("reasoning",),
        replay_key="reasoning_blocks",
        usage=Usage.split_input(
            usage.get("inputTokens", 0),
            usage.get("outputTokens", 0),
            cache_read=usage.get("cacheReadInputTokens", 0),
            cache_write=usage.get("cacheWriteInputTokens", 0),
        ),
        model=model,
    )


# -- errors ------------------------------------------------------------------------------


def classify_aws(exc: BaseException, *, provider: str) -> ProviderError:
    """botocore's exceptions (ClientError, EventStreamError, connection and credential
    errors) as ProviderErrors."""
    if isinstance(exc, ProviderError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        error = response.get("Error") or {}
        code = str(error.get("Code") or "")
        code = code[:1].upper() + code[1:]  # in-stream exceptions arrive as "throttlingException"
        message = str(error.get("Message") or exc)
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if code in _THROTTLED:
            kind = ErrorKind.RATE_LIMIT
        elif code in _TRANSIENT:
            kind = ErrorKind.TRANSIENT
        elif code in _AUTH:
            kind = ErrorKind.AUTH
        else:
            kind = None
        if kind is not None:
            status = status if isinstance(status, int) and status >= 400 else None
            return with_hints(
                ProviderError(kind, f"{code}: {message}", status=status, provider=provider), message
            )
        if isinstance(status, int) and status >= 400:
            return from_status(status, f"{code}: {message}", code, None, provider)
        return from_status(400, f"{code}: {message}", code, None, provider)
    if names & _AUTH:
        return ProviderError(ErrorKind.AUTH, f"AWS credentials: {exc}", provider=provider)
    if "NoRegionError" in names:
        return ProviderError(
            ErrorKind.FATAL, "no AWS region: set AWS_REGION or the bedrock_region setting", provider=provider
        )
    if "ReadTimeoutError" in names:
        return ProviderError(ErrorKind.STALE, f"no data: {exc}", provider=provider)
    if names & _CONNECTION or isinstance(exc, (ConnectionError, TimeoutError)):
        return ProviderError(ErrorKind.TRANSIENT, f"connection failed: {exc}", provider=provider)
    return ProviderError(ErrorKind.FATAL, f"{type(exc).__name__}: {exc}", provider=provider)
