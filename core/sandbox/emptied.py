"""What a launch's emptied temp dirs already hide: a shared /tmp or /var/tmp is an empty
read-only tmpfs inside the sandbox, with only the roots, caches and kept paths in it
mounted back. A secret in there needs no mount of its own, and a busy /tmp need not be
listed to find one (core/sandbox/bwrap.py asks before each launch).
"""

from __future__ import annotations

import os
from pathlib import Path


class Emptied:
    """What a launch's emptied temp dirs (`Mounts.private`) already hide: everything in
    them but the paths mounted back there (`exposed`: roots, caches, kept paths)."""

    def __init__(self, private: list[Path], exposed: list[Path]) -> None:
        self.private = [str(p) for p in private]
        self.exposed = [str(e) for e in exposed]
        self._parents = {os.path.dirname(e) for e in self.exposed}

    def hides(self, path: Path) -> bool:
        text = str(path)
        return inside_any(text, self.private) and not inside_any(text, self.exposed)

    def hides_children(self, folder: Path) -> bool:
        """Whether every entry of `folder` is hidden: then it need not be listed. (A child
        is in view only through a path mounted back at the child itself or above it.)"""
        return self.hides(folder) and str(folder) not in self._parents


def inside_any(path: str, folders: list[str]) -> bool:
    """Whether `path` is one of `folders` or lies inside one, compared as text (both
    absolute and normalised: the launch's paths are resolved), without pathlib's cost."""
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
