"""Where a stdio MCP server starts: in `/`, never in the workspace, and with no search path
of its environment leading into the workspace.

A server runs unconfined, and the programs an editor's entry names look in their working
directory for code before their own: `python -m mcp_server_fetch` puts it first on
`sys.path`, `npx -y @scope/server` runs the project's `node_modules/.bin` copy before any
registry's (and reads the project's `.npmrc`), other launchers read their project configs
there and in the folders above. The workspace is the attacker's and a sandboxed command
writes it unasked, so a server started there ran the workspace's code outside the sandbox
at the next session. `/` is a folder no sandboxed command can write (the sandbox binds it
read-only) and has no folder above it; the warm server lives there for the same reason.
For the same reason the program and its modules are not looked for in the session's folder:
an editor started from a shell with the project's venv activated (or direnv's `layout
python`, `PATH_add node_modules/.bin`) hands over a PATH whose `python` or `npx` is a file
a sandboxed command may rewrite.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SERVER_CWD = Path("/")
# Where a program, Python's modules and Node's are looked for.
CODE_SEARCH_PATHS = ("PATH", "PYTHONPATH", "NODE_PATH")


def server_command(command: str, session_cwd: Path) -> str:
    """The program to start: a name is looked up in PATH as before; a path written
    relative to the session's folder (`./bin/server`, the user's own entry naming a file of
    the project) is made absolute there, since the server no longer starts in it."""
    if os.sep in command and not os.path.isabs(command):
        return str(session_cwd / command)
    return command


def startable(command: str, path: str) -> bool:
    """Whether `command` (as `server_command` made it) names a program the server's own
    start would find."""
    if os.sep in command:
        return os.access(command, os.X_OK)
    return shutil.which(command, path=path) is not None


def outside_workspace(env: dict[str, str], session_cwd: Path) -> dict[str, str]:
    """`env` with the entries of its code search paths (`CODE_SEARCH_PATHS`) that are
    relative or lead into the session's folder (as written or resolved) left out."""
    from hermes_core.sandbox.hidden_env import absolute_search_path

    out = dict(env)
    for name in CODE_SEARCH_PATHS:
        if name in out:
            out[name] = absolute_search_path(out[name], outside=[session_cwd])
    return out
