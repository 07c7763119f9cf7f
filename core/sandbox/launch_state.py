"""What lives while a session's sandboxed commands run, and its end: the count of running
launches, bwrap's empty mount points for the placeholders, the cache overlays' own work
dirs, the watch on what a command may plant (`planted`) and the snapshot of what your
`Edit(…)` rules guard (`edit_guard`). `after_command` checks each command's plants and
edits once it has ended, and lets the rest go once none runs.

All of it is touched from the event loop's thread alone: local commands are counted and
uncounted there (their exit reaches the loop: `child._watch_exit`), an editor's terminals
and hooks run there, and the file tools' `accept_written` follows their worker thread
there. The one launch made in a worker thread, an image's decode, runs in a read-only
Sandbox of its own (`image_decoder`), which keeps none of it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_core.sandbox import caches, edit_guard, planted
from hermes_core.sandbox.fence_mounts import FenceMounts
from hermes_core.sandbox.mount_points import MOUNT_POINTS
from hermes_core.sandbox.work_dirs import WORK_DIRS

if TYPE_CHECKING:
    from hermes_core.sandbox import edit_globs  # loaded by a session with such a rule

logger = logging.getLogger(__name__)


class LaunchState(FenceMounts):
    """The running launches' state of a `Sandbox` (bwrap.py), which sets it up."""

    _running: int  # launched, not yet seen to end
    _work_dirs: list[Path]  # the running commands' own overlay work dirs
    _watch: planted.Watch | None  # what the running commands may plant
    _edit_before: edit_guard.Snapshot | None  # the guarded paths as the running commands found them
    edit_globs: edit_globs.Globs | None  # your wildcard `Edit(…)` rules (None: none, nothing paid)
    glob_guarded: tuple[edit_guard.Guarded, ...]  # what the last launch got read-only of their matches
    _undone: list[str]  # what `planted.undo` and `edit_guard.undo` undid, not yet told the model

    def after_command(self) -> None:
        """Once per counted launch (`launch_head`), when its command has ended (a local
        one's exit, an editor terminal's exit or release, a hook's) or will never start:
        remove the empty mount points bwrap left for the placeholders once no command of
        the session runs, and undo what the mounts could not prevent, a `commondir` planted
        in a root's `.git` (see `protected.disarm_planted_commondir`; also checked before
        the next command)."""
        last = self._running == 1
        self._running = max(0, self._running - 1)  # counted in every mode; only this one keeps state
        if self.mode != "workspace-write":
            return
        if last:
            # No command of this session has them mounted any more: bwrap's empty mount
            # points go, unless another session's running command has one mounted (a mount
            # point removed takes its mount away: `mount_points`).
            MOUNT_POINTS.release(self._placeholders, id(self))
            WORK_DIRS.give_back(self._work_dirs)
            self._work_dirs.clear()
        self._disarm()
        if self._watch is not None:
            self._undo_plants()
            if self._running == 0:
                self._watch = None
        if self._edit_before is not None:
            self._undo_edits()
            if self._running == 0:
                self._edit_before.close()
                self._edit_before = None

    def _watch_plants(self) -> None:
        """Note what a command could plant that no mount forbids (`planted`); while an
        earlier command may still run, undo what it planted first."""
        if self.mode != "workspace-write":
            return
        if self._watch is None:
            self._watch = planted.watch(self.scope.roots)
        else:
            self._undo_plants()
        if not self.edit_guarded and self.edit_globs is None:
            return
        if self._edit_before is None:
            for folder in edit_guard.make_missing_folders(self.edit_guarded, self.scope.roots):
                self._remove_when_done(folder, per_command=False)
            if self.edit_globs is not None:
                self.glob_guarded = self.edit_globs.launch(first=True)
            self._edit_before = edit_guard.identities((*self.edit_guarded, *self.glob_guarded))
        else:
            self._undo_edits()
            if self.edit_globs is not None:
                self.glob_guarded = self.edit_globs.launch(first=False)

    def _undo_edits(self) -> None:
        assert self._edit_before is not None
        guarded = self.edit_guarded
        if self.edit_globs is not None:
            guarded += self.edit_globs.to_check()
        said = edit_guard.undo(guarded, self._edit_before)
        if self.edit_globs is not None:
            said += self.edit_globs.put_back(self._edit_before)
        for sentence in said:
            logger.warning("sandbox: %s", sentence)
            self._undone.append(sentence)

    def _undo_plants(self) -> None:
        assert self._watch is not None
        for sentence in planted.undo(self._watch, self.scope.roots):
            logger.warning("sandbox: %s", sentence)
            self._undone.append(sentence)

    def _own_work_dir(self, layer: caches.Overlay) -> caches.Overlay:
        layer, work = WORK_DIRS.take(layer)
        if work is not None:
            self._work_dirs.append(work)
        return layer

    def accept_written(self, path: Path) -> None:
        """The file tools wrote `path`: while a command runs, it is no command's plant."""
        if self._watch is not None:
            planted.accept(self._watch, path, self.scope.roots)
        if self._edit_before is not None:
            edit_guard.accept(self._edit_before, path)
            outermost = self.edit_globs.outermost_match(path) if self.edit_globs is not None else None
            if outermost is not None:
                self._edit_before.note(outermost)

    def take_undone(self) -> list[str]:
        """What was undone after this session's commands since last asked (for the model)."""
        undone, self._undone = self._undone, []
        return undone
