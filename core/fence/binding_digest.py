"""What an "always" outside the sandbox is bound to: the files a command runs and a digest
of their content now (`hermes_core.fence.command_files` names the files)."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Binding:
    """What an "always" for the command is bound to: `files` (relative names, for the
    user) at `digest`; no files: the command runs nothing of the workspace's."""

    files: tuple[str, ...]
    digest: str

    def describe(self) -> str:
        """How the binding reads in an "always" label; empty when nothing is bound."""
        if not self.digest:
            return ""
        if not self.files:
            return f"while the files it runs are unchanged ({self.digest[:12]})"
        more = len(self.files) - 3
        shown = ", ".join(self.files[:3]) + (f" and {more} more" if more > 0 else "")
        verb = "is" if len(self.files) == 1 else "are"
        return f"while {shown} {verb} unchanged ({self.digest[:12]})"


def digest(files: list[Path], cwd: Path) -> Binding:
    if not files:
        return Binding((), "")
    hasher = hashlib.sha256()
    names_shown: list[str] = []
    for path in files:
        hasher.update(os.fsencode(path) + b"\0" + content_digest(path))
        if not path.is_file():
            continue
        try:
            names_shown.append(str(path.relative_to(cwd)))
        except ValueError:
            names_shown.append(str(path))
    return Binding(tuple(names_shown), hasher.hexdigest())


def content_digest(path: Path) -> bytes:
    """The file's SHA-256; a fixed word for a file that is absent (creating it later asks
    again), not regular (a FIFO must not block the approval) or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b"absent"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"not a file"
        hasher = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            hasher.update(chunk)
        return hasher.digest()
    except OSError:
        return b"unreadable"
    finally:
        os.close(fd)
