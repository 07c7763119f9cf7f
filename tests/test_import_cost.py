"""Importing the engine and its providers must not load the provider SDKs (they cost
seconds; the server loads them in a thread after `initialize`)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import core, core.providers.resolve, core.providers.chat_completions
import core.providers.anthropic_messages, core.providers.responses
import core.providers.resilient
import core.providers.errors, core.models
from core.providers.resolve import build_chain
from core.config import Settings
chain = build_chain(Settings(provider="anthropic", model="claude-sonnet-4", anthropic_api_key="k"))
loaded_after_build = sorted(m for m in ("openai", "anthropic") if m in sys.modules)
from core.providers.resolve import warm_up_sdks
warm_up_sdks()
print(json.dumps({
    "after_build": loaded_after_build,
    "after_warm_up": sorted(m for m in ("openai", "anthropic") if m in sys.modules),
    "chain": [p.api_mode for p in chain],
}))
"""


def test_importing_the_engine_and_building_providers_leaves_the_sdks_unloaded():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(result.stdout)
    assert report["chain"] == ["anthropic_messages"]
    assert report["after_build"] == []
    assert report["after_warm_up"] == ["anthropic", "openai"]
