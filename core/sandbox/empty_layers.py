"""An empty, read-only folder for a launch at a cheaper price: a read-only overlay of two
empty folders of ours instead of a tmpfs remounted read-only.

Where the time of a launch goes (README, "Benchmarks"): bwrap reads and parses the whole
`/proc/self/mountinfo` for every bind and every `--remount-ro`, to find the mounts beneath
the target, so each one costs about ten times a plain mount (0.57 ms against 0.07 for a
tmpfs and 0.22 for a read-only overlay, at load 4), and more the more mounts there are.
The sandbox mounts empty read-only folders often: a missing `.git/modules` or
`.git/worktrees`, a `.git` where a root has none, each hidden secret folder.

The two folders live in a folder of this process's own (0700) in the temp dir, which each
command sees empty (its own tmpfs): no command can put anything in them. A launch where
the temp dir is not emptied (a root holds it) gets the tmpfs as before, and so does a
machine where a read-only overlay of them does not mount (asked once per process).
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from hermes_core.sandbox.own_folders import own_folder
from hermes_core.sandbox.probe import BASE_ARGS


def overlay_args(layers: tuple[Path, Path], target: Path) -> list[str]:
    """bwrap's arguments for an empty read-only folder at `target`."""
    return ["--overlay-src", str(layers[0]), "--overlay-src", str(layers[1]), "--ro-overlay", str(target)]


def skeleton_args(layers: tuple[Path, Path], target: Path, inside: list[Path]) -> list[str] | None:
    """bwrap's arguments for a read-only folder at `target` that holds nothing but empty
    mount points for `inside` (paths in it that the launch mounts on, outermost first):
    an emptied temp dir without the remount (a bind's price) a tmpfs would need. None when
    the skeleton cannot be made."""
    skeleton = _skeleton(target, tuple(inside))
    if skeleton is None:
        return None
    # the skeleton on top: the folder's mode is its
    return ["--overlay-src", str(layers[1]), "--overlay-src", str(skeleton), "--ro-overlay", str(target)]


def _skeleton(target: Path, inside: tuple[Path, ...]) -> Path | None:
    """A folder of ours with an empty folder (or file, for a file) at each of `inside`'s
    places relative to `target`: made once per set of places (again if it was removed)."""
    digest = hashlib.sha256("\0".join(map(str, (target, *inside))).encode()).hexdigest()[:16]
    folder = own_folder("hermes-acp-skeleton-") / digest
    if folder.is_dir():
        return folder
    try:
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        draft = Path(tempfile.mkdtemp(dir=folder.parent))
        for place in inside:
            spot = draft / place.relative_to(target)
            spot.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            if place.is_dir():
                spot.mkdir(mode=0o755, exist_ok=True)
            else:
                spot.touch(mode=0o600, exist_ok=True)
        draft.chmod(0o755)
        os.replace(draft, folder)
    except OSError:
        return None if not folder.is_dir() else folder
    return folder


@functools.cache
def empty_layers(bwrap: str) -> tuple[Path, Path] | None:
    """The two empty folders, when a read-only overlay of them mounts here and shows an
    empty folder nothing can be written to; None: use a tmpfs."""
    folder = own_folder("hermes-acp-empty-")
    layers = (folder / "lower", folder / "upper")
    try:
        for layer in layers:
            layer.mkdir(mode=0o700, parents=True, exist_ok=True)  # (the folder too, if cleaned away)
    except OSError:
        return None
    # A daemon thread may still be here at exit: the cleanup then must not print a traceback.
    with tempfile.TemporaryDirectory(prefix="hermes-acp-probe-", ignore_cleanup_errors=True) as probe:
        target = Path(probe) / "target"
        target.mkdir()
        (target / "seen").write_text("")  # covered by the overlay: must not show
        check = f'test -z "$(ls -A {target})" && ! touch {target}/x 2>/dev/null'
        argv = [bwrap, *BASE_ARGS, *overlay_args(layers, target), "--", "/bin/sh", "-c", check]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        empty = not os.listdir(layers[0]) and not os.listdir(layers[1])
        return layers if done.returncode == 0 and empty else None


def usable_layers(bwrap: str, private: list[Path]) -> tuple[Path, Path] | None:
    """The empty layers for a launch that empties the temp dirs `private`: only where no
    command can reach them (their temp dir is one of those), and only while they are there
    (a temp dir cleaner may have taken them: then a tmpfs, as before)."""
    layers = empty_layers(bwrap)
    if layers is None or Path(os.path.realpath(layers[0].parent.parent)) not in private:
        return None
    return layers if all(os.path.isdir(layer) for layer in layers) else None
