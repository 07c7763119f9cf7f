"""A short launcher for a confined command that an editor runs in its terminal.

An editor shows `terminal/create`'s command and arguments as the terminal's title and
first line. The confined launch is bwrap and a screenful of its arguments, with the user's
command at the very end, out of sight. So the editor gets instead a small script of ours
and the command line: `…/sandboxed 'npm test'`. The script holds the whole bwrap launch
and hands it the command line (`exec bwrap … bash -c "$1"`), so the command runs exactly
as confined as before; the bwrap arguments just travel in the script, not on the title.

The script is a file the editor executes outside the sandbox: whoever could change it
would run code unconfined. It lives in a directory of its own (0700, outside any
workspace) that the confined command cannot write. A launch that would make that directory
writable from inside (a workspace or writable path holding the temp dir) gets the plain
bwrap launch, as before: the title suffers, the confinement does not.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shlex
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

LAUNCHER_NAME = "sandboxed"
# bwrap options whose first path the confined command may write through (an overlay's
# second, its work dir, too).
_WRITABLE_BINDS = frozenset({"--bind", "--bind-try", "--dev-bind", "--dev-bind-try"})
_OVERLAY = "--overlay"


class Launchers:
    """The launcher scripts of this process, one per distinct confined launch."""

    def __init__(self, parent: Path | None = None) -> None:
        self._parent = parent
        self._dir: Path | None = None

    def presentable(self, confined: list[str], command: str) -> list[str]:
        """`[launcher, command]` that runs `confined` (a bwrap launch whose last argument is
        `command`), or `confined` itself when no launcher can be made safe."""
        # The command line ends the launch's last argument; the sandbox may put its own
        # set-up before it in the same shell line (the process cap's `ulimit`).
        if len(confined) < 2 or not confined[-1].endswith(command):
            return confined
        prefix = confined[:-1]
        head = confined[-1][: len(confined[-1]) - len(command)]
        try:
            directory = self._directory()
            if _writable_inside(directory, prefix):
                log.info("the launcher directory %s is writable inside the sandbox: bwrap shown", directory)
                return confined
            return [str(self._launcher(directory, prefix, head)), command]
        except OSError as exc:
            log.warning("could not write a sandbox launcher (%s): bwrap shown", exc)
            return confined

    def _directory(self) -> Path:
        if self._dir is None:
            parent = str(self._parent) if self._parent is not None else None
            self._dir = Path(tempfile.mkdtemp(prefix="hermes-acp-run-", dir=parent)).resolve()
            atexit.register(shutil.rmtree, str(self._dir), True)
        return self._dir

    @staticmethod
    def _launcher(directory: Path, prefix: list[str], head: str) -> Path:
        script = (
            "#!/bin/sh\n"
            "# hermes-acp: runs the command line given as $1 in the session's sandbox.\n"
            # sh joins the quoted head and "$1" into one word; "$1" is not evaluated again.
            f'exec {shlex.join(prefix)} {shlex.quote(head)}"$1"\n'
        )
        digest = hashlib.sha256(script.encode()).hexdigest()[:12]
        folder = directory / digest
        path = folder / LAUNCHER_NAME
        if path.is_file():
            return path
        folder.mkdir(mode=0o700, exist_ok=True)
        draft = folder / f".{LAUNCHER_NAME}.{os.getpid()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(script)
        os.replace(draft, path)  # whole or not at all: an editor never runs half a script
        return path


def _writable_inside(directory: Path, launch: list[str]) -> bool:
    """Whether the launch binds `directory` (or a folder holding it) writable. (Read past
    bwrap's own options too: a false alarm only costs the title.)"""
    for index, option in enumerate(launch[:-1]):
        if option in _WRITABLE_BINDS:
            written = launch[index + 1 : index + 2]
        elif option == _OVERLAY:
            written = launch[index + 1 : index + 3]
        else:
            continue
        for raw in written:
            source = Path(raw).resolve()
            if directory == source or directory.is_relative_to(source):
                return True
    return False


LAUNCHERS = Launchers()
