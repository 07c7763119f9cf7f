"""The SDK's package `__init__`, deferred: start-up imports only what it uses, and the
package is whole for whoever asks it for more."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from hermes_acp.sdk_import import defer_package_init
defer_package_init()  # as `hermes-acp --stdio` does before it imports the server
import hermes_acp.server
after_import = "acp.schema" in sys.modules
import acp
from acp import schema as by_from
submodule_alone = "acp.core" not in sys.modules
from acp import PROTOCOL_VERSION, Agent, RequestError
from acp.exceptions import RequestError as direct
print(json.dumps({
    "schema_after_importing_the_server": after_import,
    "submodule_without_init": submodule_alone,
    "schema_is_the_module": by_from is sys.modules["acp.schema"],
    "protocol_version": PROTOCOL_VERSION,
    "same_class": RequestError is direct,
    "agent": Agent.__name__,
    "init_ran_once": getattr(vars(acp).get("__getattr__"), "__module__", "acp") == "acp",  # ours is gone
}))
"""


def test_the_server_imports_without_the_schema_and_the_package_stays_whole() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {
        "schema_after_importing_the_server": False,
        "submodule_without_init": True,
        "schema_is_the_module": True,
        "protocol_version": 1,
        "same_class": True,
        "agent": "Agent",
        "init_ran_once": True,
    }


OPENAI_PROBE = """
import json, sys
from core.providers.openai_client import async_openai
client_class = async_openai()
client_alone = "openai.lib.azure" not in sys.modules
import openai
# the first lookup runs the __init__, and its name is one of the package's own lazy ones
from openai import AssistantEventHandler
from openai.types.chat import ChatCompletion
from openai import AsyncOpenAI, APIStatusError
from openai._exceptions import APIStatusError as direct
print(json.dumps({
    "client_alone": client_alone,
    "same_client": AsyncOpenAI is client_class,
    "same_error": APIStatusError is direct,
    "chat_type": ChatCompletion.__name__,
    "whole_now": "openai.lib.azure" in sys.modules,
    "own_getattr": AssistantEventHandler.__name__,
}))
"""


def test_the_openai_client_comes_alone_and_the_package_stays_whole() -> None:
    result = subprocess.run([sys.executable, "-c", OPENAI_PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "client_alone": True,
        "same_client": True,
        "same_error": True,
        "chat_type": "ChatCompletion",
        "whole_now": True,
        "own_getattr": "AssistantEventHandler",
    }


ANTHROPIC_PROBE = """
import json, sys
from core.providers.anthropic_client import async_anthropic
client_class = async_anthropic()
import pathlib
type_files = sum(1 for _ in pathlib.Path(sys.modules["anthropic.types"].__path__[0]).rglob("*.py"))
with_the_client = sum(m.startswith("anthropic.types.") for m in sys.modules)
client_alone = "anthropic.lib.vertex" not in sys.modules
import anthropic
from anthropic.types import Message
from anthropic.types.beta import BetaMessage
from anthropic import AsyncAnthropic, APIStatusError, AnthropicVertex
from anthropic._exceptions import APIStatusError as direct
print(json.dumps({
    "under_half_the_type_modules": with_the_client < type_files / 2,
    "client_alone": client_alone,
    "same_client": AsyncAnthropic is client_class,
    "same_error": APIStatusError is direct,
    "types": [Message.__name__, BetaMessage.__name__],
    "same_type": Message is sys.modules["anthropic.types.message"].Message,
    "whole_now": "anthropic.lib.vertex" in sys.modules and AnthropicVertex.__name__ == "AnthropicVertex",
}))
"""


def test_the_anthropic_client_comes_alone_and_the_package_stays_whole() -> None:
    result = subprocess.run(
        [sys.executable, "-c", ANTHROPIC_PROBE], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "under_half_the_type_modules": True,
        "client_alone": True,
        "same_client": True,
        "same_error": True,
        "types": ["Message", "BetaMessage"],
        "same_type": True,
        "whole_now": True,
    }
