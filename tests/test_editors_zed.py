"""editors/zed/: our ACP registry entry, held to the registry's own rules, and the custom-agent
settings.

The registry (github.com/agentclientprotocol/registry) builds from `agent.json` + `icon.svg`:
its JSON schema (vendored in tests/registry_schema/) and its build script's checks
(tests/support/registry_rules.py) must pass, and its CI starts the agent as
`uvx <package>@<version> <args>` with the exact `initialize` in `VALIDATOR_INITIALIZE`, then wants
an auth method of type `agent` or `terminal` (scripts/registry_entry.py: that side, and the one
reader of `agent.json`). Publishing to PyPI is not possible from here, so
`uvx` is mapped onto this checkout: `<package>` must be our distribution (pyproject's name, the
version of hermes_acp/__init__.py), and uvx runs the console script named like the package,
installed in the venv running these tests. (scripts/release_check.py runs the real `uvx` on
the built wheel.)
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from hermes_acp import __version__
from scripts.registry_entry import (
    ENTRY_FOLDER,
    VALIDATOR_INITIALIZE,
    auth_method_type,
    auth_problem,
    package_name,
    read_entry,
    uvx_launch,
)
from tests.support.acp_harness import spawn_server
from tests.support.registry_rules import entry_problems, icon_problems

ROOT = Path(__file__).resolve().parent.parent
ZED = ROOT / "editors" / "zed"
ENTRY_DIR = ROOT / ENTRY_FOLDER
AUTH_REQUIRED = -32000


def _project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_registry_accepts_our_entry() -> None:
    assert entry_problems(read_entry(), ENTRY_DIR.name) == []
    assert icon_problems((ENTRY_DIR / "icon.svg").read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        # what the registry refused in our entry before: uvx takes no `cmd`
        (lambda e: e["distribution"]["uvx"].update(cmd="hermes-acp"), "'cmd' was unexpected"),
        (lambda e: e.update(id="Hermes ACP"), "does not match"),
        (lambda e: e.update(id="hermes"), "does not name its folder"),
        (lambda e: e.update(version="1.0"), "does not match"),
        (lambda e: e.update(version="1.0.3x"), "not x.y.z"),
        (lambda e: e.update(distribution={}), "should be non-empty"),
        (lambda e: e.update(distribution={"pip": {"package": "x"}}), "'pip' was unexpected"),
        (lambda e: e["distribution"]["uvx"].update(package="hermes-acp-agent@latest"), "not pinned"),
        (lambda e: e["distribution"]["uvx"].update(package="hermes-acp-agent@9.9.9"), "pins 9.9.9"),
        (lambda e: e.pop("description"), "'description' is a required property"),
    ],
)
def test_the_checks_refuse_what_the_registry_refuses(change: Any, complaint: str) -> None:
    entry = read_entry()
    change(entry)
    problems = entry_problems(entry, ENTRY_DIR.name)
    assert any(complaint in problem for problem in problems), problems


def _svg(body: str, size: str = 'viewBox="0 0 16 16"') -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg" {size}>{body}</svg>'


@pytest.mark.parametrize(
    ("svg", "complaint"),
    [
        (_svg('<path fill="currentColor"/>', 'width="24" height="24"'), "24x24"),
        (_svg('<path fill="#f00"/>'), "'#f00'"),
        (_svg('<path style="stroke: red"/>'), "'red'"),
        (_svg("<style>path { fill: blue }</style><path/>"), "'blue'"),
        (_svg('<path fill="none"/>'), "currentColor"),
        (_svg('<!-- x --><path fill="currentColor"/>'), "comments"),
        (_svg('<path fill="currentColor"/>', ""), "no width"),
    ],
)
def test_the_icon_checks_refuse_what_the_registry_refuses(svg: str, complaint: str) -> None:
    assert any(complaint in problem for problem in icon_problems(svg))


@pytest.mark.parametrize(
    ("methods", "complaint"),
    [
        ([], "no auth method of type agent or terminal"),
        # AUTHENTICATION.md: environment-variable auth is not a method the registry supports
        ([{"id": "key", "name": "Key", "type": "env_var", "vars": []}], "no auth method of type"),
        # an agent method alone passes the registry, but a new user could not run `setup`
        ([{"id": "key", "name": "Key"}], "no terminal method"),
        ([{"id": "setup", "name": "Setup", "_meta": {"terminal-auth": {}}}], None),
        ([{"id": "key", "name": "Key"}, {"id": "setup", "name": "Setup", "type": "terminal"}], None),
    ],
)
def test_the_auth_verdict_is_the_validators(methods: list[dict[str, Any]], complaint: str | None) -> None:
    problem = auth_problem(methods)
    assert problem is None if complaint is None else complaint in (problem or ""), problem


def test_the_entry_launches_our_distribution_at_our_version() -> None:
    entry, project = read_entry(), _project()
    uvx = entry["distribution"]["uvx"]
    assert uvx["package"] == f"{project['name']}@{__version__}"
    assert entry["version"] == __version__
    assert entry["license"] == project["license"]
    assert uvx["args"] == ["--stdio"]
    # `uvx NAME@V` runs the console script called NAME
    assert project["scripts"][package_name(uvx["package"])] == project["scripts"]["hermes-acp"]


def _validator_env(home: Path) -> dict[str, str]:
    """The environment the registry's auth check gives an agent: a sandbox HOME, PATH, TERM."""
    home.mkdir()
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(home), "TERM": "dumb", "LANG": "C.UTF-8"}
    return env | {"HERMES_ACP_WARM": "0"}  # no warm server left behind by the test (README "Warm start")


@pytest.mark.asyncio
async def test_the_registry_auth_check_finds_a_terminal_method_that_authenticates(tmp_path: Path) -> None:
    """The registry's CI, replayed: its `initialize`, then the `setup` method it found, used."""
    package, *args = uvx_launch(read_entry())
    script = Path(sys.executable).parent / package_name(package)
    assert script.is_file(), f"{script} is not installed (pip install -e .)"
    env = _validator_env(tmp_path / "home")
    async with spawn_server(env, command=(str(script), *args)) as server:
        result = (await server.request(1, "initialize", VALIDATOR_INITIALIZE))["result"]
        assert auth_problem(result["authMethods"]) is None
        types = {method["id"]: auth_method_type(method) for method in result["authMethods"]}
        assert types["setup"] == "terminal", "a client announcing _meta.terminal-auth can run setup"
        setup = next(method for method in result["authMethods"] if method["id"] == "setup")
        assert setup["args"] == ["setup"]

        # The user has not finished `hermes-acp setup` yet: no key, so auth is still required.
        reply = await server.request(2, "authenticate", {"methodId": "setup"})
        assert reply["error"]["code"] == AUTH_REQUIRED, reply
        assert "hermes-acp setup" in reply["error"]["message"]

        # What setup writes; authenticate reads it again.
        config = tmp_path / "home" / ".hermes-acp" / "config.toml"
        config.parent.mkdir()
        config.write_text('provider = "openai"\nmodel = "gpt-4.1"\nopenai_api_key = "k"\n', encoding="utf-8")
        reply = await server.request(3, "authenticate", {"methodId": "setup"})
        assert reply.get("result") == {}, reply


def test_settings_snippet_is_a_custom_agent_zed_can_start() -> None:
    settings = json.loads((ZED / "settings.json").read_text(encoding="utf-8"))
    servers = settings["agent_servers"]
    assert list(servers) == ["Hermes"]
    hermes = servers["Hermes"]
    assert hermes["type"] == "custom"
    assert re.fullmatch(r"/.+/hermes-acp", hermes["command"]), "an absolute path: Zed's PATH is minimal"
    assert hermes["args"] == ["--stdio"]
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in hermes["env"].items())
