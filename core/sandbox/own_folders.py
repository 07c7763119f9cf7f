"""Folders of this process's own in the temp dir: made on first use (0700, `mkdtemp`) and
removed when the process exits. A sandboxed command sees the temp dir empty, so nothing it
runs can reach or plant what the agent keeps there."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path


@functools.cache
def own_folder(prefix: str) -> Path:
    """The process's folder for `prefix`, the same one at every call."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
