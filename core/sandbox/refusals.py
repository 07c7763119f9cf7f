"""Why a sandboxed command failed, when the sandbox rather than the command is likely to
blame: a protected path or a place outside the writable ones it tried to write, a secret
the sandbox hides, the network turned off, a path outside the workspace refused. The
sentence goes to the model with the command's output, so it does not retry blindly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from hermes_core.sandbox.bwrap_args import Mounts


def explain_refusal(
    output: str, *, mounts: Callable[[], Mounts], temp_dir: Path, network: bool
) -> str | None:
    """Why the sandbox, not the command, is likely to blame for a failure, or None.
    `mounts` gives what the command had mounted (asked only when a line needs it)."""
    for line in output.splitlines():
        if "Read-only file system" in line and _PROTECTED_HINT.search(line):
            return (
                "it tried to change a protected path, which stays read-only in the sandbox because "
                "it runs outside it later (git's config, hooks or repository, the agent's own "
                "install, shell start-up files, tool installs, the editor's project settings, other agents': "
                "write those with write_file, which asks the user) "
                f"({line.strip()[:200]})"
            )
    read_only = [line for line in output.splitlines() if "Read-only file system" in line]
    if read_only:
        caches = [str(o.lower) for o in mounts().overlays]
        for line in read_only:
            if any(f"{cache}/" in line for cache in caches):
                return (
                    "it wrote to a toolchain cache, which in the sandbox only that toolchain's own "
                    "programs (pip, npm, cargo, go, ...) and scripts may write; a line of other "
                    f"utilities sees the caches read-only ({line.strip()[:200]})"
                )
        return f"it tried to write outside the sandbox's writable places ({read_only[0].strip()[:200]})"
    hidden = [str(p) for p in mounts().hidden_dirs]
    for line in output.splitlines():
        if any(h in line for h in hidden) and _DENIED.search(line):
            return f"it touched a secret the sandbox hides ({line.strip()[:200]})"
    if not network:
        for line in output.splitlines():
            if _NETWORK_FAILURE.search(line):
                return f"it needed the network, which is off in the sandbox ({line.strip()[:200]})"
    for line in output.splitlines():
        if _DENIED.search(line) and _outside_path(line, mounts(), temp_dir):
            return f"it was refused access outside the workspace ({line.strip()[:200]})"
    return None


_DENIED = re.compile(
    r"Permission denied|Operation not permitted|No such file or directory|EACCES|EPERM|EROFS"
)
_NETWORK_FAILURE = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Could not resolve host|"
    r"Name or service not known|Connection refused|ENETUNREACH|EAI_AGAIN|ECONNREFUSED|"
    r"Failed to establish a new connection|getaddrinfo"
)
_PROTECTED_HINT = re.compile(
    r"\.git\b|(^|[\s/'\"])\.(vscode|zed|helix|devcontainer|claude|gemini|cursor|codex)\b|"
    r"\.(bashrc|bash_profile|bash_login|profile|zshrc|zshenv|zprofile|inputrc|gitconfig)\b|"
    r"site-packages|\.venv/|\.cargo/(bin|config|env)|\.local/(bin|lib|share/uv|pipx)|\.rustup|"
    r"\.config/(git|fish|systemd|autostart|nvim|Code|zed)\b"
)
_PATH = re.compile(r"(?<![\w.])(/[^\s'\"`:,;)]+)")


def _outside_path(line: str, mounts: Mounts, temp_dir: Path) -> bool:
    """Whether a permission error names an absolute path outside the writable places."""
    if not re.search(r"Permission denied|Operation not permitted|EACCES|EPERM", line):
        return False
    writable = [*mounts.writable, temp_dir, *(o.lower for o in mounts.overlays)]
    for match in _PATH.finditer(line):
        path = Path(match.group(1))
        if not any(path == w or path.is_relative_to(w) for w in writable):
            return True
    return False
