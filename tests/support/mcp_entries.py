"""The editor's entry for the test MCP server (`mcp_server.py`) over stdio, as
`session/new` carries it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

MCP_SERVER = str(Path(__file__).parent / "mcp_server.py")


def stdio_entry(name: str, **env: str) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [MCP_SERVER],
        "env": [{"name": key, "value": value} for key, value in env.items()],
    }
