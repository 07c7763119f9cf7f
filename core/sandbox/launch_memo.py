"""A session's last bwrap options, used again while what they are made of stays the same.

The options are a pure function of what the launch mounts (`Mounts`), its directory,
TMPDIR, the network setting and the environment names it drops (`bwrap_args.launch_argv`):
a session's commands mostly mount the same, so the argv (ordering the mounts, some 170
strings) need not be made again. The mounts themselves are still worked out from the file
system before every launch (`FenceMounts.mounts`); only their argv is kept.

A local command's writable cache overlays each get a fresh work dir (`work_dirs`), so
those paths differ at every launch: they are left out of the comparison and put in their
places. A skeleton (`empty_layers`) named in the options is used only while it is still
there (a temp dir cleaner may have taken it); otherwise the options are made again,
which makes it again.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_core.sandbox.bwrap_args import Mounts
from hermes_core.sandbox.empty_layers import skeletons_present


class LaunchMemo:
    """The last launch's options, what they were made of, and where its work dirs sit."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._options: list[str] = []
        self._work_at: list[int] = []  # the index of each writable overlay's work dir

    def options(self, mounts: Mounts, inputs: tuple[object, ...], make: Callable[[], list[str]]) -> list[str]:
        """The options for `mounts` and the launch's other `inputs` (hashable, compared
        whole): the last ones, with this launch's work dirs, when both are as they were
        then; else `make()`'s."""
        key = (mounts.key(), inputs)
        if key == self._key and skeletons_present(self._options):
            options = list(self._options)
            for index, layer in zip(self._work_at, mounts.overlays, strict=True):
                options[index] = str(layer.work)
            return options
        options = make()
        work_at = [_work_index(options, str(layer.lower), str(layer.work)) for layer in mounts.overlays]
        if None in work_at:  # not laid out as expected: not kept
            self._key = None
            return options
        self._key, self._options = key, list(options)
        self._work_at = [index for index in work_at if index is not None]
        return options


def _work_index(options: list[str], lower: str, work: str) -> int | None:
    """Where `--overlay UPPER WORK LOWER` names this overlay's work dir."""
    for index, option in enumerate(options[:-3]):
        if option == "--overlay" and options[index + 2] == work and options[index + 3] == lower:
            return index + 2
    return None
