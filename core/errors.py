"""The engine's exceptions: one root, a few families.

Every error hermes-acp raises on purpose is a `HermesError`; its family says who can act
on it. The classes live beside the code that raises them; this module holds the root and
the families that have no home of their own. The protocol side maps families to JSON-RPC
codes in one table (hermes_acp/session/errors.py).

    HermesError
    ├── ConfigError          core/config.py: the settings cannot be read
    ├── ProviderError        core/providers/base.py: a model call failed
    ├── WorkspaceError       core/workspace.py: a file or process operation was refused
    ├── StoreError           core/store/schema.py: the session database
    ├── ToolFailed           a tool call could not do its work (CannotRun, McpCallFailed)
    └── InvalidInput         malformed input: a command line, a skill file, an option
"""

from __future__ import annotations


class HermesError(Exception):
    """An error hermes-acp raises on purpose; its message is written for whoever reads it."""


class ToolFailed(HermesError):
    """A tool call could not do its work; the message goes to the model as the result."""


class InvalidInput(HermesError, ValueError):
    """Input that cannot be used as given; the message says what is wrong.

    A ValueError too: that is what it is, and callers catching ValueError keep working."""
