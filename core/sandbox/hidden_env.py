"""The environment variables a confined command loses: the agent's own model credentials
(a command the model wrote could otherwise send them anywhere while the network is on),
those of the fallback providers, other tokens by name, and the addresses of the user's
agents; and the PATH the agent looks its own programs up in.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

# The user's agents: ssh-agent signs with their keys (even with the network off), gpg-agent
# decrypts, the session bus reaches the keyring. Unset (and their sockets hidden: bwrap.py).
AGENT_ENV: tuple[str, ...] = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS")
# The user's terminals and editors, through whose sockets a process runs commands as the user,
# outside the sandbox (`tmux new-window`, `wezterm cli spawn`, `kitten @ launch`, Neovim's
# `--remote-send`, VS Code's CLI): unset, and the sockets they name hidden (bwrap.py).
SOCKET_ENV: tuple[str, ...] = (
    "TMUX",
    "WEZTERM_UNIX_SOCKET",
    "KITTY_LISTEN_ON",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    # Window managers' and terminals' IPC: `swaymsg exec CMD`, `i3-msg exec`, `niri msg
    # action spawn`, `alacritty msg create-window -e CMD` run CMD as the user.
    "SWAYSOCK",
    "I3SOCK",
    "NIRI_SOCKET",
    "ALACRITTY_SOCKET",
    # A container engine's socket (Rancher Desktop's `~/.rd/docker.sock`, colima's, lima's,
    # a rootless podman elsewhere): `docker run -v ~:/h …` runs anything outside the sandbox.
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "BUILDKIT_HOST",
    "CONTAINERD_ADDRESS",
)
# Agents' variables whose value names a socket too (the variables are unset: AGENT_ENV).
_AGENT_SOCKETS: tuple[str, ...] = ("DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO", "PULSE_SERVER")
# The agent's own model credentials (and their pools, `OPENAI_API_KEY_2`), and the AWS keys
# Bedrock reads: hidden from confined commands like the files under ~/.aws.
CREDENTIAL_ENV = re.compile(
    r"HERMES_ACP_\w*KEY\w*|(OPENAI|ANTHROPIC|OPENROUTER)_API_KEY(_\d+)?|"
    r"AWS_(SECRET_ACCESS_KEY|SESSION_TOKEN|ACCESS_KEY_ID)"
)
CREDENTIAL_NAMES: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "HERMES_ACP_API_KEY",
    "HERMES_ACP_OPENAI_API_KEY",
    "HERMES_ACP_ANTHROPIC_API_KEY",
    "HERMES_ACP_OPENROUTER_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ACCESS_KEY_ID",
)


# Other credentials the user's environment carries (GH_TOKEN, NPM_TOKEN, HF_TOKEN,
# STRIPE_SECRET_KEY, DB_PASSWORD, ...): the sandbox hides the files they come from (~/.config/gh,
# ~/.npmrc), so their copies in the environment go too. By name: a word that says so.
SECRET_ENV = re.compile(
    r"(\w+_)?(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|APIKEY|CREDENTIALS?|"
    # npm's `npm_config__authToken` / `_auth`, CI's `CI_JOB_JWT`, Sentry's DSN (its key),
    # Azure's `…_CONNECTION_STRING` (`AccountKey=`).
    r"AUTH|AUTHTOKEN|JWT|DSN|CONNECTION_STRING)(_\d+)?|"
    r"\w+_(KEY|PAT|PASS|PW|PWD)(_\d+)?|PGPASSWORD|"
    # The word inside the name (Terraform's `TF_TOKEN_app_terraform_io`, poetry's
    # `POETRY_PYPI_TOKEN_PYPI`, Rails' `SECRET_KEY_BASE`, `SLACK_WEBHOOK_URL`) or run into
    # it (gradle's `ORG_GRADLE_PROJECT_signingPassword`, upper-cased here), and the password
    # managers' unlocked sessions (1Password's `OP_SESSION_<account>`, Bitwarden's `BW_SESSION`).
    # A name that only names one (`PROJECT_TOKEN_NAME`, `…_TOKEN_FILE`) is kept.
    r"(\w+_)?(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|WEBHOOK|COOKIE|BEARER)_"
    r"(?!(\w+_)?(NAME|FILE|PATH|DIR|TYPE|ENDPOINT|HEADER)$)\w+|"
    r"\w*(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|APIKEY|PRIVATEKEY|SIGNINGKEY|ACCESSKEY)|"
    r"OP_SESSION_\w+|BW_SESSION|"
    # Credentials CI systems hand over whole, under names without such a word: GitLab's
    # `DOCKER_AUTH_CONFIG` (registry logins), a base64 kubeconfig (`KUBE_CONFIG`,
    # `KUBECONFIG_DATA`), a cloud service account's JSON key (`FIREBASE_SERVICE_ACCOUNT`).
    r"(\w+_)?AUTH_CONFIG|(\w+_)?KUBE_?CONFIG_(DATA|B64|BASE64|CONTENT)|(\w+_)?KUBE_CONFIG|"
    r"(\w+_)?SERVICE_ACCOUNT(_JSON|_B64|_BASE64)?"
)
# A URL carrying a password (`DATABASE_URL=postgres://app:pw@db/x`,
# `PIP_INDEX_URL=https://user:token@pypi.corp/simple`): a credential by its value, whatever
# the variable's name. A proxy's is left (`HTTPS_PROXY=http://u:p@proxy:3128`): the network
# the sandbox grants goes through it.
_URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@", re.IGNORECASE)
_PROXY = re.compile(r"(\w+_)?PROXY", re.IGNORECASE)


def secret_variables(names: Iterable[str]) -> list[str]:
    """Which of `names` look like credentials by their name (SECRET_ENV)."""
    return sorted(name for name in names if _secret_name(name))


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    """(By the name alone, so kept: every launch asks for every variable, twice.)"""
    return bool(SECRET_ENV.fullmatch(name.upper())) and name != "OLDPWD"


def credential_values(env: Mapping[str, str]) -> list[str]:
    """Which variables of `env` hold a URL with a password in it, proxies aside."""
    # (`://` and `@` first: the pattern needs both, and most values have neither, so the
    # regex runs on a few values instead of all of them, twice per launch)
    return sorted(
        name
        for name, value in env.items()
        if "://" in value and "@" in value and _URL_PASSWORD.search(value) and not _PROXY.fullmatch(name)
    )


def hides_variable(name: str, *, hidden_env: frozenset[str], ssh_agent: bool) -> bool:
    """Whether a confined command loses `name`; `hidden_env` (the fallbacks' key variables)
    covers their numbered pools too, and `ssh_agent` keeps the ssh agent's address."""
    if CREDENTIAL_ENV.fullmatch(name) or secret_variables([name]):
        return True
    if name in SOCKET_ENV:
        return True
    if name in AGENT_ENV and not (ssh_agent and name in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")):
        return True
    base, _, number = name.rpartition("_")
    return name in hidden_env or (number.isdigit() and base in hidden_env)


def absolute_search_path(path: str, outside: Iterable[str | os.PathLike[str]] = ()) -> str:
    """PATH without its relative entries (an empty one, `.`, `node_modules/.bin`): those name
    the workspace when the agent runs in it, and what the agent starts outside the sandbox
    (rg, an MCP server's `npx`) must not be a program the workspace put there. Nor, for the
    same reason, an entry inside one of the folders `outside` (the workspace's: an activated
    `.venv/bin`, direnv's `PATH_add node_modules/.bin`), as written or where it leads."""
    folders = [os.path.realpath(folder).rstrip(os.sep) + os.sep for folder in outside]

    def kept(entry: str) -> bool:
        if not os.path.isabs(entry):
            return False
        places = {os.path.normpath(entry) + os.sep, os.path.realpath(entry) + os.sep}
        return not any(place.startswith(folder) for place in places for folder in folders)

    return os.pathsep.join(entry for entry in path.split(os.pathsep) if kept(entry))


def named_sockets(env: Mapping[str, str]) -> list[Path]:
    """The sockets SOCKET_ENV's and the agents' variables name (`TMUX=/tmp/tmux-0/default,42,0`,
    `KITTY_LISTEN_ON=unix:/tmp/kitty`, `DOCKER_HOST=unix:///home/u/.rd/docker.sock`,
    `DBUS_SESSION_BUS_ADDRESS=unix:path=/x/bus,guid=…`, `GPG_AGENT_INFO=/x/S.gpg-agent:0:1`);
    an abstract one (`unix:@kitty`, `unix:abstract=…`) or a TCP address is no path."""
    out: list[Path] = []
    for name in (*SOCKET_ENV, *_AGENT_SOCKETS):
        value = env.get(name, "")
        if name in ("TMUX", "DBUS_SESSION_BUS_ADDRESS"):
            value = value.split(",")[0].split(";")[0]
        if name == "GPG_AGENT_INFO":
            value = value.split(":")[0]
        for prefix in ("unix://", "unix:path=", "unix:"):
            if value.startswith(prefix):
                value = value.removeprefix(prefix)
                break
        if value.startswith("/"):
            out.append(Path(value))
    return out
