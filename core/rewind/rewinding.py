"""What a /rewind reads and does: a session's turn records, and the files the agent changed
in them put back as they were (checkpoints.py keeps the snapshots; `CheckpointStore` is a
`Rewinding`). Every write and delete goes through the folder the snapshot read, never
through a link."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_core.fence.scope import NotRegularFile, WorkspaceError, WorkspaceScope, opened_path, replace_in
from hermes_core.rewind.checkpoint_objects import Entry, Manifest, ObjectStore
from hermes_core.rewind.file_list import DIRECTORY_FLAGS, MAX_FILE_BYTES

Protected = Callable[[str], "str | None"]  # why writing the file at this path leaves the sandbox


@dataclass(slots=True)
class TurnRecord:
    prompt_id: str
    before: str  # manifest hash
    after: str | None = None  # None while the turn runs (or when it was never finished)
    # `status_clock_ns` just before the `before` snapshot; 0 in records older than it.
    since_ns: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_id": self.prompt_id,
            "before": self.before,
            "after": self.after,
            "since_ns": self.since_ns,
        }


@dataclass(slots=True)
class RestoreReport:
    restored: list[str] = field(default_factory=list)  # written back to their earlier content
    deleted: list[str] = field(default_factory=list)  # created by the agent after the point
    kept: list[str] = field(default_factory=list)  # changed by hand since: left as they are
    lost: list[str] = field(default_factory=list)  # too large to have been kept
    failed: list[str] = field(default_factory=list)  # "path: why" (a directory now a link out, …)


class Rewinding:
    """The rewinding half of a project's `CheckpointStore`, which provides the rest."""

    root: Path
    scope: WorkspaceScope
    objects: ObjectStore

    def load_manifest(self, digest: str) -> Manifest:
        raise NotImplementedError

    def scan(self) -> Manifest:
        raise NotImplementedError

    def _open_listed(self, rel: str, root_fd: int) -> int:
        raise NotImplementedError

    def changed_files(self, record: TurnRecord) -> list[str]:
        """The files a turn changed (created, edited or deleted)."""
        before = self.load_manifest(record.before)
        after = self.load_manifest(record.after) if record.after else self.scan()
        changed = (rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))
        return sorted(rel for rel in changed if rel in before or not self._there_before(rel, record))

    def restore(
        self, records: list[TurnRecord], *, force: bool = False, protected: Protected | None = None
    ) -> RestoreReport:
        """Put back the files the agent changed in `records` (a session's turns from the
        rewind point on, oldest first) as they were before the first of them. A file whose
        content now differs from what the agent last left is the user's: kept (and named)
        unless `force`. `protected(path)`: why a file (its absolute path) runs outside the
        sandbox once written, or None; such a file is not written back but named under
        `failed`: the snapshot may hold what a background command planted there just before
        it (`.husky/pre-commit`), which the sandbox renamed aside since."""
        report = RestoreReport()
        if not records:
            return report
        target = self.load_manifest(records[0].before)
        current = self.scan()
        left_by_agent: dict[str, Entry | None] = {}
        for record in records:
            before = self.load_manifest(record.before)
            after = self.load_manifest(record.after) if record.after else current
            for rel in before.keys() | after.keys():
                if before.get(rel) != after.get(rel):
                    left_by_agent[rel] = after.get(rel)
        for rel in sorted(left_by_agent):
            now = current.get(rel)
            wanted = target.get(rel)
            if now is None and wanted is not None:
                now = self._unlisted(rel)
            if now == wanted:
                continue
            if now != left_by_agent[rel] and not force:
                report.kept.append(rel)
                continue
            if wanted is None and self._there_before(rel, records[0]):
                continue  # listed by no snapshot before (ignored then), unchanged since: as it was
            try:
                if wanted is None:
                    self._delete(rel)
                    report.deleted.append(rel)
                elif not wanted[0]:
                    report.lost.append(rel)
                else:
                    self._write_back(rel, wanted, protected)
                    report.restored.append(rel)
            except OSError as exc:  # that file stays as it is; the others are still restored
                report.failed.append(f"{rel}: {exc.strerror or exc}")
        self.scan()  # the restored state is what the next snapshot compares against
        return report

    def _there_before(self, rel: str, record: TurnRecord) -> bool:
        """Whether `rel`, in no snapshot before `record`, was there all along: its status last
        changed before that snapshot (a ctime cannot be set back). A file the ignore rules
        hid then (`data/` in `.gitignore`) is in no snapshot; a turn that changed the rules
        made it appear in the one after, as if the agent had created it, and the rewind
        deleted the user's file."""
        if not record.since_ns:
            return False
        try:
            return os.lstat(os.path.join(self.root, rel)).st_ctime_ns < record.since_ns
        except OSError:
            return False

    def _unlisted(self, rel: str) -> Entry | None:
        """A file that is there though the listing left it out (ignored since: the turn
        added `data/` to `.gitignore`, so it read as deleted): what it holds now, so that
        what the user wrote there since is kept, not overwritten. One that cannot be read
        counts as changed; one behind a folder that is now a link is the write-back's to refuse."""
        try:
            self._refuse_links_on_the_way(rel, os.path.dirname(rel))
        except OSError:
            return None
        try:
            info = os.lstat(os.path.join(self.root, rel))
        except FileNotFoundError:
            return None
        except OSError:
            return ("?", 0)
        root_fd = os.open(self.root, DIRECTORY_FLAGS)
        try:
            with os.fdopen(self._open_listed(rel, root_fd), "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except (OSError, WorkspaceError):
            return ("?", 0)
        finally:
            os.close(root_fd)
        if len(data) > MAX_FILE_BYTES:
            return ("?", 0)
        return (hashlib.sha256(data).hexdigest(), info.st_mode & 0o7777)

    def _write_back(self, rel: str, entry: Entry, protected: Protected | None = None) -> None:
        data = self.objects.read(entry[0])
        if protected is not None:
            self._refuse_links_on_the_way(rel, os.path.dirname(rel))  # that refusal names the link
            if why := protected(str(self.root / rel)):  # before a folder on its way is made
                raise OSError(f"not written back, since {why}; restore it yourself if you meant to")
        directory, name, there = self._open_parent(rel, make_dirs=True)
        try:
            if isinstance(there, str):
                raise OSError(f"{rel} is no longer a regular file")
            replace_in(directory, name, data, entry[1])
        finally:
            os.close(directory)

    def _delete(self, rel: str) -> None:
        try:
            directory, name, there = self._open_parent(rel, make_dirs=False)
        except FileNotFoundError:
            return
        try:
            if isinstance(there, int):  # a regular file; a link or nothing is left alone
                os.unlink(name, dir_fd=directory)
        finally:
            os.close(directory)

    def _open_parent(self, rel: str, *, make_dirs: bool) -> tuple[int, str, int | str | None]:
        """The folder `rel` names a file in, opened where the snapshot read it: through no
        link at all. A link that stays inside is fine for the file tools, not here: a turn
        that swapped `docs` for a link to `.git/hooks` made `docs/pre-commit` "deleted", and
        putting it back through the link wrote git's hook (or `.git/config`, or
        `.vscode/tasks.json`), run outside the sandbox later. Checked by name first (so no
        folder is made through a link), then where the opened descriptor really is."""
        parent = os.path.dirname(rel)
        expected = os.path.normpath(os.path.join(self.root, parent))
        self._refuse_links_on_the_way(rel, parent)
        try:
            directory, name, there = self.scope.open_parent(rel, make_dirs=make_dirs)
        except NotRegularFile as exc:
            raise OSError(f"{rel} is no longer a regular file") from exc
        except WorkspaceError as exc:  # its directory now leads outside the workspace
            raise OSError(f"{rel}: {exc}") from exc
        where = opened_path(directory)
        if where is not None and str(where) != expected:
            os.close(directory)
            raise OSError(f"{rel}: a folder on its path is now a link (to {where}), not written through")
        return directory, name, there

    def _refuse_links_on_the_way(self, rel: str, parent: str) -> None:
        path = str(self.root)
        for part in parent.split("/") if parent else ():
            path = os.path.join(path, part)
            try:
                if stat.S_ISLNK(os.lstat(path).st_mode):
                    target = os.readlink(path)
                    raise OSError(
                        f"{rel}: a folder on its path is now a link ({part} -> {target}), not written through"
                    )
            except FileNotFoundError:
                return  # made below, as a folder
