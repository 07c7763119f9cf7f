"""Package managers' own config files, which name a private index with its login in the
URL (`index-url = https://build:TOKEN@pypi.corp/simple` in `pip.conf`, `uv.toml`'s
`[[index]] url`, conda's `channel_alias`). The tools must read them to work, so they cannot
be hidden like `~/.pypirc`: the sandbox binds a copy without the URLs' user parts over each
(as for git's config, `git_credentials`). A sandboxed install from that index then fails to
authenticate, and asks to run outside.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# Under the home folder (or a moved XDG_CONFIG_HOME for the `.config/` ones).
_IN_HOME: tuple[str, ...] = (
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".config/uv/uv.toml",
    ".condarc",
    ".config/conda/.condarc",
)
_SYSTEM: tuple[str, ...] = (
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    "/etc/uv/uv.toml",
    "/etc/conda/.condarc",
)
# Variables naming one of them elsewhere.
_NAMED_BY: tuple[str, ...] = ("PIP_CONFIG_FILE", "UV_CONFIG_FILE", "CONDARC")


def index_configs(home: Path, env: Mapping[str, str]) -> list[Path]:
    """Every such file a tool may read, whether it exists or not."""
    out = [home / name for name in _IN_HOME]
    xdg = env.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(xdg):
        out += [Path(xdg) / name.removeprefix(".config/") for name in _IN_HOME if name.startswith(".config/")]
    out += [Path(name) for name in _SYSTEM]
    out += [Path(env[name]) for name in _NAMED_BY if os.path.isabs(env.get(name, ""))]
    return list(dict.fromkeys(out))
