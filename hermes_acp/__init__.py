"""hermes-acp: a coding agent that editors drive over the Agent Client Protocol."""

from hermes_acp.sdk_import import defer_package_init

__version__ = "0.1.0"

# `initialize` is answered before the SDK's schema is imported (see hermes_acp/sdk_import.py).
defer_package_init()
