"""editors/zed/: our ACP registry entry (the registry's FORMAT.md) and the custom-agent settings.

The registry runs a `uvx` entry as `uvx --from <package> <cmd> [args]`. Publishing to PyPI is
not possible from here, so the command is mapped onto this checkout: `<package>` must be our
own distribution (pyproject's name and version), `<cmd>` one of its [project.scripts], and that
script, installed in the venv running these tests, is started with `[args]`.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.acp_harness import NO_CAPABILITIES, server_env, spawn_server

ROOT = Path(__file__).resolve().parent.parent
ZED = ROOT / "editors" / "zed"
ENTRY_DIR = ZED / "registry" / "hermes-acp"

# The registry's rules for agent.json, from its FORMAT.md and its validation: an id of lowercase
# letters, digits and hyphens that names the entry's folder, a semantic version, and at least
# one distribution; a package distribution has a package and optionally cmd, args, env.
_PACKAGE = {
    "type": "object",
    "required": ["package"],
    "properties": {
        "package": {"type": "string", "minLength": 1},
        "cmd": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "additionalProperties": False,
}
AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "version", "description", "repository", "authors", "license", "distribution"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "name": {"type": "string", "minLength": 1},
        "version": {"type": "string", "pattern": r"^[0-9]+\.[0-9]+\.[0-9]+"},
        "description": {"type": "string", "minLength": 1},
        "repository": {"type": "string", "pattern": "^https://"},
        "website": {"type": "string", "pattern": "^https://"},
        "authors": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        "license": {"type": "string", "minLength": 1},
        "distribution": {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "npx": _PACKAGE,
                "uvx": _PACKAGE,
                "binary": {"type": "object", "minProperties": 1},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

SVG = "{http://www.w3.org/2000/svg}"
_COLOUR_ATTRIBUTES = ("fill", "stroke", "color", "stop-color")


def _entry() -> dict[str, Any]:
    return json.loads((ENTRY_DIR / "agent.json").read_text(encoding="utf-8"))


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_agent_json_follows_the_registry_format() -> None:
    entry = _entry()
    jsonschema.validate(entry, AGENT_SCHEMA)
    assert ENTRY_DIR.name == entry["id"], "the registry wants the folder named after the id"
    assert "uvx" in entry["distribution"], "we ship on PyPI, so the registry runs us through uvx"


def test_the_schema_refuses_what_the_registry_refuses() -> None:
    """The checks above can fail: entries the registry would reject fail them too."""
    good = _entry()
    bad_entries = [
        {**good, "id": "Hermes ACP"},
        {**good, "version": "latest"},
        {**good, "distribution": {}},
        {**good, "distribution": {"uvx": {"cmd": "hermes-acp"}}},
        {**good, "distribution": {"pip": {"package": "hermes-acp"}}},
        {key: value for key, value in good.items() if key != "license"},
    ]
    for bad in bad_entries:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, AGENT_SCHEMA)


def test_the_entry_names_our_package_version_and_script() -> None:
    entry, project = _entry(), _pyproject()
    uvx = entry["distribution"]["uvx"]
    name, _, version = uvx["package"].partition("@")
    assert name == project["name"]
    assert version == project["version"] == entry["version"]
    assert uvx["cmd"] in project["scripts"]
    assert entry["license"] == project["license"]
    assert uvx["args"] == ["--stdio"]


def test_icon_is_a_16x16_svg_in_currentcolor() -> None:
    root = ET.parse(ENTRY_DIR / "icon.svg").getroot()
    assert root.tag == f"{SVG}svg"
    assert (root.get("width"), root.get("height")) == ("16", "16")
    assert root.get("viewBox") == "0 0 16 16"
    uses_current_colour = False
    for element in root.iter():
        for attribute in _COLOUR_ATTRIBUTES:
            value = element.get(attribute)
            if value is not None:
                assert value in ("currentColor", "none"), f"{element.tag} has {attribute}={value!r}"
                uses_current_colour |= value == "currentColor"
        assert "style" not in element.attrib, "colours in style attributes escape the theme"
    assert uses_current_colour


@pytest.mark.asyncio
async def test_the_named_command_starts_our_agent_and_offers_auth_methods(tmp_path: Path) -> None:
    uvx = _entry()["distribution"]["uvx"]
    # `uvx --from hermes-acp@0.1.0 hermes-acp --stdio` -> the same script installed in this venv.
    script = Path(sys.executable).parent / uvx["cmd"]
    assert script.is_file(), f"{script} is not installed (pip install -e .)"
    env = server_env(tmp_path / "home")  # no model configured: a first start from the registry
    async with spawn_server(env, command=(str(script), *uvx["args"])) as server:
        reply = await server.request(
            1, "initialize", {"protocolVersion": 1, "clientCapabilities": NO_CAPABILITIES}
        )
        result = reply["result"]
        assert result["protocolVersion"] >= 1
        assert result["agentInfo"]["name"] == _pyproject()["name"]
        methods = result["authMethods"]
        assert methods and all(method["id"] and method["name"] for method in methods)


def test_settings_snippet_is_a_custom_agent_zed_can_start() -> None:
    settings = json.loads((ZED / "settings.json").read_text(encoding="utf-8"))
    servers = settings["agent_servers"]
    assert list(servers) == ["Hermes"]
    hermes = servers["Hermes"]
    assert hermes["type"] == "custom"
    assert re.fullmatch(r"/.+/hermes-acp", hermes["command"]), "an absolute path: Zed's PATH is minimal"
    assert hermes["args"] == ["--stdio"]
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in hermes["env"].items())
