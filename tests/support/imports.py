"""What a server run with PYTHONVERBOSE has imported, read from its stderr."""

from __future__ import annotations

import re

from tests.support.acp_harness import ServerProcess

_IMPORTED = re.compile(r"import '([\w.]+)' #")


def imported(server: ServerProcess) -> set[str]:
    """The modules the server has imported so far, from its `-v` lines: `import 'name' # ...`
    (from any thread)."""
    return {match[1] for line in server.stderr_lines if (match := _IMPORTED.match(line))}
