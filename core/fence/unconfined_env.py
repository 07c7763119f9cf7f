"""What a command run outside the sandbox gets over the agent's environment."""

from __future__ import annotations

import os
from collections.abc import Iterable


def unconfined_environment(hidden: Iterable[str] = ()) -> dict[str, str]:
    """What a command run outside the sandbox gets over the agent's environment.

    Python's bytecode cache moves to a folder of this process's own (0700, in the temp dir
    the sandbox sees empty): a sandboxed command could otherwise write a
    `__pycache__/*.pyc` stamped with a bound module's mtime and size, which Python runs
    instead of that unchanged source. And the agent's own model credentials (`hidden`: the
    fallbacks' key variables too) are emptied, as for hooks and MCP servers: the user
    approved the command, not handing it the agent's keys (`npm test` runs whatever
    package.json says by then)."""
    from hermes_core.sandbox.hidden_env import CREDENTIAL_ENV
    from hermes_core.sandbox.own_folders import own_folder

    env = {name: "" for name in os.environ if CREDENTIAL_ENV.fullmatch(name) or name in hidden}
    env["PYTHONPYCACHEPREFIX"] = str(own_folder("hermes-pycache-"))
    return env
