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

import os
import re
from pathlib import Path

from hermes_core.fence.gitignore import read_regular
from hermes_core.sandbox.file_memo import read_through

MAX_CONFIG_BYTES = 256 * 1024
_IDENTITY_AGENT = re.compile(
    r"^\s*IdentityAgent(?:\s*=\s*|\s+)(\"[^\"]*\"|\S+)", re.IGNORECASE | re.MULTILINE
)
_ENV = re.compile(r"\$\{(\w+)\}")


def named_agents(home: Path) -> list[Path]:
    """The sockets `home/.ssh/config` names in `IdentityAgent` lines (its `Include`d files are
    not read), as absolute paths; read again only when the file changed."""
    return read_through(str(home / ".ssh" / "config"), _agents)


def _agents(config: str) -> list[Path]:
    data = read_regular(config, MAX_CONFIG_BYTES)
    if data is None:
        return []
    home = os.path.dirname(os.path.dirname(config))
    out: list[Path] = []
    for value in _IDENTITY_AGENT.findall(data.decode("utf-8", errors="replace")):
        value = value.strip('"')
        if value.lower() == "none" or value == "SSH_AUTH_SOCK":
            continue  # no agent, or the variable's (hidden where it points)
        value = _ENV.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
        value = value.replace("%d", home).replace("%%", "%")
        if value.startswith("~/"):
            value = os.path.join(home, value[2:])
        if os.path.isabs(value) and "%" not in value and "${" not in value:
            out.append(Path(os.path.normpath(value)))
    return out
