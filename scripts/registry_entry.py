"""Our ACP registry entry and what the registry's validator asks of the agent it names.

The one reader of `editors/zed/registry/hermes-acp/agent.json` for the release check,
scripts/set_version.py and the tests (tests/support/registry_rules.py holds the registry's
build rules, tests/test_editors_zed.py applies them). The validator's side is read from the
registry's CI (github.com/agentclientprotocol/registry, .github/workflows/): the `initialize`
it sends every agent, and how it types the auth methods in the answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENTRY_FOLDER = Path("editors/zed/registry/hermes-acp")
ENTRY = ENTRY_FOLDER / "agent.json"

# What the validator sends before it reads `authMethods`, byte for byte in meaning.
VALIDATOR_INITIALIZE: dict[str, Any] = {
    "protocolVersion": 1,
    "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
    "clientCapabilities": {
        "terminal": True,
        "fs": {"readTextFile": True, "writeTextFile": True},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}
# The validator accepts an agent that offers one auth method of these types.
ACCEPTED_AUTH_TYPES = frozenset({"agent", "terminal"})


def read_entry(root: Path = ROOT) -> dict[str, Any]:
    return json.loads((root / ENTRY).read_text(encoding="utf-8"))


def uvx_launch(entry: dict[str, Any]) -> list[str]:
    """What the registry runs after `uvx`: the pinned package and its arguments."""
    uvx = entry["distribution"]["uvx"]
    return [uvx["package"], *uvx.get("args", [])]


def package_name(spec: str) -> str:
    """`name@1.0`, `name==1.0` -> `name`."""
    return re.split(r"[<>=!@]", spec, maxsplit=1)[0]


def auth_method_type(method: dict[str, Any]) -> str:
    """The type the validator gives a method: its `type`, else a legacy `_meta` marker, else agent."""
    if method.get("type"):
        return str(method["type"])
    meta = method.get("_meta")
    if isinstance(meta, dict):
        if "terminal-auth" in meta:
            return "terminal"
        if "agent-auth" in meta:
            return "agent"
    return "agent"


def auth_problem(methods: list[dict[str, Any]]) -> str | None:
    """Why the validator (or we: a new user must be able to run `setup` from the client)
    would refuse these auth methods; None when it accepts them."""
    types = [auth_method_type(method) for method in methods]
    if not ACCEPTED_AUTH_TYPES & set(types):
        return f"no auth method of type agent or terminal: {methods}"
    if "terminal" not in types:
        return f"no terminal method (`hermes-acp setup`) for the validator's terminal-auth client: {methods}"
    return None
