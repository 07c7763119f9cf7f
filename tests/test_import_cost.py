"""The engine and its providers never load the provider SDKs: they talk HTTP with aiohttp
(core/providers/http.py), which loads at the first call or in the server's warm-up."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import hermes_core, hermes_core.providers.resolve, hermes_core.providers.chat_completions
import hermes_core.providers.anthropic_messages, hermes_core.providers.responses
import hermes_core.providers.resilient
import hermes_core.providers.errors, hermes_core.models
from hermes_core.providers.resolve import build_chain
from hermes_core.config import Settings
chain = build_chain(Settings(provider="anthropic", model="claude-sonnet-4", anthropic_api_key="k"))
loaded_after_build = sorted(m for m in ("openai", "anthropic", "httpx2", "aiohttp") if m in sys.modules)
from hermes_acp.startup.warmup import _import_provider_sdk
_import_provider_sdk()
chain[0]._make_client()
print(json.dumps({
    "after_build": loaded_after_build,
    "after_warm_up": sorted(m for m in ("openai", "anthropic", "httpx2", "aiohttp") if m in sys.modules),
    "chain": [p.api_mode for p in chain],
}))
"""


def test_the_engine_its_providers_and_the_warm_up_never_load_the_sdks():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(result.stdout)
    assert report["chain"] == ["anthropic_messages"]
    assert report["after_build"] == []
    assert report["after_warm_up"] == ["aiohttp"]  # and not httpx2: only MCP over HTTP needs it
