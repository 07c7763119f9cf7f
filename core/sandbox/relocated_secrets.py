"""Secrets the user's environment moved away from where the list names them.

`GNUPGHOME=/data/gnupg`, `CARGO_HOME=/opt/cargo`, `CODEX_HOME`, `DOCKER_CONFIG`,
`KUBECONFIG`, `XDG_CONFIG_HOME=~/cfg` (then `~/cfg/gh/hosts.yml` is gh's token): the tools
read their keys and tokens there, not under the home folder, so hiding only the home's
names left them readable by a sandboxed `cat`, `read_file` and `search`. The variables
themselves are often dropped from a command's environment (`hidden_env`), but the files
stay where they are, at a path the model can guess or read from a config.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# A variable and what it names: "" the path itself (a folder or a file), else names inside.
_RELOCATIONS: dict[str, tuple[str, ...]] = {
    "GNUPGHOME": ("",),
    "DOCKER_CONFIG": ("",),
    "GH_CONFIG_DIR": ("",),
    "PASSWORD_STORE_DIR": ("",),
    "AZURE_CONFIG_DIR": ("",),
    "CLOUDSDK_CONFIG": ("",),
    "CODEX_HOME": ("auth.json",),
    "CLAUDE_CONFIG_DIR": (".credentials.json", ".claude.json"),
    "CARGO_HOME": ("credentials", "credentials.toml"),
    "GRADLE_USER_HOME": ("gradle.properties",),
    "HF_HOME": ("token", "stored_tokens"),
    "HF_TOKEN_PATH": ("",),
    "AWS_SHARED_CREDENTIALS_FILE": ("",),
    "AWS_CONFIG_FILE": ("",),  # `credential_process` and SSO settings
    "GOOGLE_APPLICATION_CREDENTIALS": ("",),
    "NPM_CONFIG_USERCONFIG": ("",),
    "npm_config_userconfig": ("",),
    "NETRC": ("",),
    "PGPASSFILE": ("",),
    "TF_CLI_CONFIG_FILE": ("",),
    "BOTO_CONFIG": ("",),
    "DATABRICKS_CONFIG_FILE": ("",),
}
# A list of files (`KUBECONFIG=a:b`).
_PATH_LISTS: tuple[str, ...] = ("KUBECONFIG",)
# Base folders the XDG variables move: the list's names under them move along.
_XDG: dict[str, str] = {
    "XDG_CONFIG_HOME": ".config/",
    "XDG_DATA_HOME": ".local/share/",
    "XDG_CACHE_HOME": ".cache/",
}
# Every variable read here: their values key the file tools' cached list.
RELOCATING: tuple[str, ...] = (*_RELOCATIONS, *_PATH_LISTS, *_XDG)


def relocated_secrets(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[Path, ...]:
    """Where `env` puts secrets: the files and folders its variables name, and the list's
    `names` (relative to the home folder) under a moved XDG folder. Absolute paths only
    (a relative one would be relative to wherever the tool runs)."""
    out: list[Path] = []
    for variable, inside in _RELOCATIONS.items():
        base = env.get(variable, "")
        if os.path.isabs(base):
            out += [Path(os.path.normpath(os.path.join(base, name))) for name in inside]
    for variable in _PATH_LISTS:
        out += [
            Path(os.path.normpath(p)) for p in env.get(variable, "").split(os.pathsep) if os.path.isabs(p)
        ]
    for variable, prefix in _XDG.items():
        base = env.get(variable, "")
        if os.path.isabs(base):
            out += [Path(base) / name.removeprefix(prefix) for name in names if name.startswith(prefix)]
    return tuple(dict.fromkeys(out))
