"""How a test module's end-to-end server differs from the default one (see tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.acp_harness import ZED_CAPABILITIES


@dataclass(frozen=True)
class ServerSetup:
    """How a module's server differs from the default one: `SERVER_SETUP = ServerSetup(...)`."""

    settings: Mapping[str, str] = field(default_factory=dict)  # extra environment, HERMES_ACP_*
    config_toml: str = ""  # written to $HERMES_ACP_HOME/config.toml before the start
    capabilities: Mapping[str, Any] = field(default_factory=lambda: ZED_CAPABILITIES)
    sdk_client: bool = True  # False: the tests speak raw lines (`raw`), no SDK client reads stdout
    prepare_home: Callable[[Path], None] | None = None  # fills the home before the start


def write_config(env: Mapping[str, str], text: str) -> Path:
    """$HERMES_ACP_HOME/config.toml with `text`, as a user would have written it."""
    config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config
