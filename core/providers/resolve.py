"""From settings to providers: which API shape, which key, which base URL, which chain.

Importing this module stays cheap: aiohttp loads when a provider makes its first call,
or earlier, off the event loop (the protocol side's warm-up).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, get_args
from urllib.parse import urlparse

from hermes_core.config import ApiMode, Settings
from hermes_core.providers.base import Provider
from hermes_core.providers.limits import ContextLimits

API_MODES: tuple[ApiMode, ...] = get_args(ApiMode)
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_HEADERS = {"HTTP-Referer": "https://github.com/hermes-acp/hermes-acp", "X-Title": "hermes-acp"}


def resolve_api_mode(provider: str, base_url: str | None, explicit: str | None) -> ApiMode:
    """explicit > the provider's name > the base URL's shape > chat_completions."""
    if explicit in API_MODES:
        return explicit
    if provider == "bedrock":
        return "bedrock_converse"
    if provider == "anthropic":
        return "anthropic_messages"
    if provider == "openai-responses":
        return "responses"
    if provider in ("openai", "openrouter"):
        return "chat_completions"
    if base_url and "anthropic" in base_url.lower():
        return "anthropic_messages"
    return "chat_completions"


# The variable whose numbered twins (NAME_1, NAME_2, ...) add keys to a provider's pool.
_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
MAX_NUMBERED_KEYS = 32


def numbered_keys(env_name: str | None) -> list[str]:
    """NAME_1, NAME_2, ... from the environment, up to the first gap."""
    keys: list[str] = []
    if not env_name:
        return keys
    for n in range(1, MAX_NUMBERED_KEYS + 1):
        value = os.environ.get(f"{env_name}_{n}")
        if not value:
            break
        keys.append(value)
    return keys


def key_pool(settings: Settings, provider: str, api_key_env: str | None, primary: bool) -> list[str]:
    """A provider's extra keys: the settings' `api_keys` (configured provider only), then the
    numbered variables."""
    extra = list(settings.api_keys) if primary else []
    return extra + numbered_keys(
        api_key_env or _KEY_ENV.get(provider) or ("HERMES_ACP_API_KEY" if primary else None)
    )


def _key_and_base(settings: Settings, provider: str) -> tuple[str | None, str | None]:
    if provider in ("openai", "openai-responses"):
        return settings.openai_api_key, settings.openai_base_url
    if provider == "anthropic":
        return settings.anthropic_api_key, settings.anthropic_base_url
    if provider == "openrouter":
        return settings.openrouter_api_key, OPENROUTER_BASE_URL
    return settings.api_key, settings.base_url


def build_provider(
    settings: Settings,
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    api_mode: str | None = None,
) -> Provider:
    """A provider for `provider`/`model` (the settings' own when not given).

    The key: `api_key_env`'s variable, else the provider's own key, else `settings.api_key`
    for the configured provider. The base URL: `base_url`, else `settings.base_url` for the
    configured provider, else the provider's own.
    """
    name = provider or settings.provider
    primary = name == settings.provider
    key, default_base = _key_and_base(settings, name)
    if api_key_env:
        key = os.environ.get(api_key_env) or None
    elif key is None and primary:
        key = settings.api_key
    url = base_url or (settings.base_url if primary else None) or default_base
    mode = resolve_api_mode(name, url, api_mode or (settings.api_mode if primary else None))
    options: dict[str, Any] = {}
    if mode == "bedrock_converse":
        options = {"region": settings.bedrock_region, "profile": settings.bedrock_profile}
    made = _provider_class(mode)(
        model or settings.model,
        api_key=key,
        base_url=url,
        name=name,
        timeout=settings.request_timeout_seconds,
        stale_seconds=settings.stale_stream_seconds,
        extra_headers=OPENROUTER_HEADERS if name == "openrouter" else None,
        api_keys=key_pool(settings, name, api_key_env, primary),
        **options,
    )
    # Where an overflow's stated context limit is learned (core/providers/resilient.py).
    made.context_limits = ContextLimits(settings)
    return made


def primary_base_url(settings: Settings) -> str | None:
    """The configured provider's base URL; None: its API shape's default."""
    return settings.base_url or _key_and_base(settings, settings.provider)[1]


def _provider_class(mode: ApiMode) -> type[Any]:
    if mode == "anthropic_messages":
        from hermes_core.providers.anthropic_messages import AnthropicMessagesProvider

        return AnthropicMessagesProvider
    if mode == "responses":
        from hermes_core.providers.responses import ResponsesProvider

        return ResponsesProvider
    if mode == "bedrock_converse":
        from hermes_core.providers.bedrock import BedrockConverseProvider

        return BedrockConverseProvider
    from hermes_core.providers.chat_completions import ChatCompletionsProvider

    return ChatCompletionsProvider


def build_chain(settings: Settings, model: str | None = None) -> list[Provider]:
    """The primary provider (settings' provider with `model` or settings.model), then the
    configured fallbacks, in order."""
    ContextLimits(settings).apply_stored()
    chain = [build_provider(settings, model=model or settings.model)]
    # A fallback entry's fields are build_provider's arguments, by name.
    chain += [build_provider(settings, **entry.model_dump()) for entry in settings.fallback]
    return chain


def has_credentials(settings: Settings) -> bool:
    """Whether the configured provider can be called: it has a key, or it is a custom or
    local endpoint (Ollama, llama.cpp, vLLM) that needs none."""
    if settings.provider == "bedrock":
        return True  # the AWS credential chain decides, at the first call
    if has_api_key(settings):
        return True
    return bool(settings.base_url and (settings.provider == "custom" or _is_local(settings.base_url)))


def has_api_key(settings: Settings) -> bool:
    """Whether an API key for the configured provider is set (config or environment)."""
    key, _ = _key_and_base(settings, settings.provider)
    return bool(key or settings.api_key or key_pool(settings, settings.provider, None, True))


def _is_local(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def provider_module(settings: Settings) -> None:
    """Import the module of the settings' API shape (blocking: call in a thread)."""
    _provider_class(resolve_api_mode(settings.provider, settings.base_url, settings.api_mode))
