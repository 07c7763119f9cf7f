"""The ssh agents your ssh config names (`IdentityAgent`), hidden from the sandbox like the
one `SSH_AUTH_SOCK` names.

Password managers serve ssh keys from a socket of their own and have you name it in
`~/.ssh/config` (`IdentityAgent ~/.1password/agent.sock`, KeePassXC's, Bitwarden's, a
Flatpak's path), often with no `SSH_AUTH_SOCK` set: hiding that variable's socket missed
them, and a sandboxed `SSH_AUTH_SOCK=<the path> ssh -T git@github.com` signed with your
keys. `~/.ssh` itself is hidden, so a command cannot read which path it is, but it can try
the few every manager documents.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from pathlib import Path

from hermes_core.fence.gitignore import read_regular
from hermes_core.sandbox.file_memo import read_through

MAX_CONFIG_BYTES = 256 * 1024
_IDENTITY_AGENT = re.compile(
    r"^\s*IdentityAgent(?:\s*=\s*|\s+)(\"[^\"]*\"|\S+)", re.IGNORECASE | re.MULTILINE
)
_INCLUDE = re.compile(r"^\s*Include(?:\s*=\s*|\s+)(.+)$", re.IGNORECASE | re.MULTILINE)
_ENV = re.compile(r"\$\{(\w+)\}")
MAX_DEPTH = 16  # ssh's own limit on nested Includes
MAX_FILES = 64


def named_agents(home: Path) -> list[Path]:
    """The sockets `home/.ssh/config` names in `IdentityAgent` lines, its `Include`d files'
    too (globs, relative to `~/.ssh`, as deep as ssh itself follows them), as absolute
    paths; each file is read again only when it changed."""
    ssh = os.path.join(home, ".ssh")
    out: list[Path] = []
    seen: set[str] = set()
    pending = [(os.path.join(ssh, "config"), 0)]
    while pending and len(seen) < MAX_FILES:
        config, depth = pending.pop()
        if config in seen:
            continue
        seen.add(config)
        agents, includes = read_through(config, _directives)
        sockets = (_socket(value, str(home)) for value in agents)
        out += [socket for socket in sockets if socket is not None]
        if depth >= MAX_DEPTH:
            continue
        for pattern in includes:
            pattern = os.path.join(home, pattern[2:]) if pattern.startswith("~/") else pattern
            matches = sorted(glob.glob(os.path.join(ssh, pattern)))  # an absolute one stays itself
            pending += [(match, depth + 1) for match in reversed(matches)]
    return out


def _directives(config: str) -> tuple[list[str], list[str]]:
    """The `IdentityAgent` values and the `Include` patterns of one config file, as written
    (a password manager's own file, `Include ~/.ssh/1Password/config`, names its agent)."""
    data = read_regular(config, MAX_CONFIG_BYTES)
    if data is None:
        return [], []
    text = data.decode("utf-8", errors="replace")
    includes: list[str] = []
    for line in _INCLUDE.findall(text):
        try:
            includes += shlex.split(line, comments=True)
        except ValueError:
            includes += line.split()
    return [value.strip('"') for value in _IDENTITY_AGENT.findall(text)], includes


def _socket(value: str, home: str) -> Path | None:
    if value.lower() == "none" or value == "SSH_AUTH_SOCK":
        return None  # no agent, or the variable's (hidden where it points)
    value = _ENV.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
    value = value.replace("%d", home).replace("%%", "%")
    if value.startswith("~/"):
        value = os.path.join(home, value[2:])
    if os.path.isabs(value) and "%" not in value and "${" not in value:
        return Path(os.path.normpath(value))
    return None
