"""Checkpoints: the workspace's files as they were before a turn changed them, for /rewind.

Pure Python, no git: the repository's own `.git` is never touched, and no git (with the
workspace's config, hooks or fsmonitor) ever runs. A snapshot is a manifest (relative
path -> content hash and mode) of the files ripgrep lists (tracked and untracked,
ignore rules honoured, `.git` left out); each file's content is stored once under its
SHA-256 in the project's object store. A later snapshot re-reads only the files whose
size, mtime, ctime or inode moved since the last one, so it costs a stat per file.

Layout under `<home>/checkpoints/<project key>/` (core/rewind/checkpoint_objects.py):
  packs/<id>.pack, .idx    file contents, compressed, by hash: one pack per snapshot
  manifests/<hash>.z       manifests, by hash, as differences from a full one
  stat-cache.z             size, mtimes and inode per path, as the last cold scan saw them
  sessions/<session>.json  the session's turns: prompt id, manifest before and after

A turn is snapshotted once, before its first call that may write (an edit or a
command), and again when it ends, so a rewind knows which files the agent changed and
can tell the user's later edits from its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_core.fence.beneath import open_beneath
from hermes_core.fence.scope import NotRegularFile, WorkspaceError, WorkspaceScope, opened_path, replace_in
from hermes_core.rewind.checkpoint_objects import Entry, Manifest, ObjectStore, Seen, write_atomic
from hermes_core.sandbox.secrets import is_env_file, is_secret_path

log = logging.getLogger(__name__)

Protected = Callable[[str], "str | None"]  # why writing the file at this path leaves the sandbox

MAX_FILE_BYTES = 8 * 1024 * 1024  # larger files are listed but not kept (named when a rewind meets one)
LIST_TIMEOUT_SECONDS = 60.0
PROMPT_PREVIEW_CHARS = 200
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
MAX_FILES = 200_000  # a larger tree is not snapshotted (the turn goes on, a warning is logged)
_CLOCK_REALTIME_COARSE = 5  # Linux's; Python names no constant for it


def project_key(cwd: str | Path) -> str:
    return hashlib.sha256(os.path.realpath(cwd).encode()).hexdigest()[:24]


def list_files(root: Path, max_files: int = MAX_FILES) -> list[str]:
    """The workspace's files, relative, as ripgrep lists them: ignore rules honoured,
    hidden files kept, `.git` left out, symbolic links not followed (nor listed).

    Read as rg writes it and stopped at `max_files`: a tree of millions of files costs no
    more memory or time than the cap before it is refused (rg is killed there)."""
    import tempfile

    from hermes_core.fence.ripgrep import find_rg

    argv = [find_rg(), "--no-config", "--files", "--hidden", "--no-require-git", "-0", "-g", "!.git"]
    # rg's complaints go to a file: a pipe nobody reads while the names are read would
    # stop rg once full (unreadable folders by the thousand).
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(
            argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors
        ) as rg:
            files, over = _read_names(rg, max_files)
            if over:
                rg.kill()
                raise OSError(f"over the {max_files:,} files checkpoints take; not snapshotted")
            returncode = rg.wait()
        if returncode not in (0, 1):  # 1: no files
            errors.seek(0)
            message = errors.read(4096).decode(errors="replace").strip()
            raise OSError(f"listing the workspace failed: {message or f'rg exited {returncode}'}")
    return files


def _read_names(rg: subprocess.Popen[bytes], max_files: int) -> tuple[list[str], bool]:
    """rg's NUL-separated names as they come, and whether there were more than `max_files`.
    The whole listing is bounded by `LIST_TIMEOUT_SECONDS`, and an rg blocked for good on a
    FIFO it met (an ignore file) is stopped at once: rg is killed (its output then ends) and
    OSError says why."""
    import threading

    from hermes_core.fence.rg_stall import POLL_SECONDS, StallWatch, blocked_path, stall_message

    assert rg.stdout is not None
    out = rg.stdout.fileno()
    files: list[str] = []
    done = threading.Event()
    blocked: list[str] = []

    def watch() -> None:
        stall = StallWatch(rg.pid)
        deadline = time.monotonic() + LIST_TIMEOUT_SECONDS
        while not done.wait(POLL_SECONDS):
            if stall.stalled(len(files)):
                blocked.append(stall_message(blocked_path(rg.pid)))
            if blocked or time.monotonic() > deadline:
                rg.kill()
                return

    watcher = threading.Thread(target=watch, name="checkpoint-rg-watch", daemon=True)
    watcher.start()
    rest = b""
    try:
        while chunk := os.read(out, 1 << 16):
            *names, rest = (rest + chunk).split(b"\0")
            files += map(os.fsdecode, filter(None, names))
            if len(files) > max_files:
                return files, True
    finally:
        done.set()
        watcher.join()
    if blocked:
        raise OSError(f"listing the workspace failed: {blocked[0]}")
    if rest:
        files.append(os.fsdecode(rest))
    return files, len(files) > max_files


def status_clock_ns() -> int:
    """Now, by the clock the kernel stamps a file's ctime with (the coarse real-time clock,
    a few ms behind `time.time_ns()`): a file created or changed after this has a ctime at
    least this. Elsewhere, the fine clock less a margin for that lag."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            return time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
    return time.time_ns() - 50_000_000


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


class CheckpointStore:
    """One project's snapshots, shared by its sessions; one session's turn records."""

    def __init__(self, home: Path, cwd: str | Path, session_id: str, *, max_files: int = MAX_FILES) -> None:
        self.max_files = max_files
        self.root = Path(os.path.realpath(cwd))
        # Files are read and written beneath the root, never by a name checked first: a
        # directory swapped for a link out between the listing and the read (or the rewind)
        # must not carry an outside file into a checkpoint, nor a restore out of the workspace.
        self.scope = WorkspaceScope(self.root)
        self.base = home / "checkpoints" / project_key(cwd)
        self.session_id = session_id
        self.objects = ObjectStore(self.base)
        self._seen: Seen | None = None  # what the last scan saw; from the stat cache at first
        self._home = self.scope.home_folder  # whose secrets are never copied into the store

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self) -> str:
        """Store the workspace as it is now; the manifest's hash."""
        manifest = self.scan()
        return self.objects.save_manifest(manifest)

    def scan(self) -> Manifest:
        """The workspace now; new contents stored. A file is read again only when its size,
        mtime, ctime or inode moved (ctime cannot be set back by a program)."""
        cold = self._seen is None
        previous = self.objects.load_seen() if self._seen is None else self._seen
        manifest: Manifest = {}
        seen: Seen = {}
        prefix = f"{self.root}/"  # strings, not Paths: a later turn's scan is mostly this loop
        lstat, is_regular, has = os.lstat, stat.S_ISREG, self.objects.has
        root_fd = os.open(self.root, _DIRECTORY_FLAGS)
        try:
            for rel in list_files(self.root, self.max_files):
                try:
                    info = lstat(prefix + rel)
                except OSError:
                    continue  # gone since the listing
                if not is_regular(info.st_mode):
                    continue
                key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
                old = previous.get(rel)
                if old is not None and old[:4] == key and (not old[4] or has(old[4])):
                    digest = old[4]
                else:
                    stored = self._store_file(rel, info.st_size, root_fd)
                    if stored is None:
                        continue
                    digest = stored
                mode = info.st_mode & 0o7777
                seen[rel] = (*key, digest, mode)
                manifest[rel] = (digest, mode)
        finally:
            os.close(root_fd)
        self._seen = seen
        self.objects.flush()
        if cold:  # the next session's first scan starts from this one
            self.objects.save_seen(seen)
        return manifest

    def _store_file(self, rel: str, size: int, root_fd: int) -> str | None:
        if size > MAX_FILE_BYTES:
            return ""
        try:
            fd = self._open_listed(rel, root_fd)
        except (OSError, WorkspaceError):
            return None  # gone, no longer regular, a secret, or leading out since the listing
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            return ""
        digest = hashlib.sha256(data).hexdigest()
        self.objects.add(digest, data)
        return digest

    def _open_listed(self, rel: str, root_fd: int) -> int:
        """A listed file, opened as `WorkspaceScope.open_file` would: beneath the root (the
        kernel refuses a link out, whenever it was planted), regular, one name (a hard link
        may be ~/.ssh/id_rsa's other name), not a secret. Its secrets check asks where the
        descriptor really is, once, instead of three lookups by name: those cost a first
        snapshot of 10,000 files some ten seconds more. Without /proc, `open_file` itself."""
        fd = open_beneath(root_fd, str(self.root), rel, _READ_FLAGS)
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise NotRegularFile(rel, status.st_mode)
            if status.st_nlink > 1:
                raise WorkspaceError(f"{rel} has {status.st_nlink} names")
            opened = opened_path(fd)
            if opened is not None and (
                is_env_file(os.path.basename(rel)) or is_secret_path(opened, home=self._home)
            ):
                raise WorkspaceError(f"{rel} is a secret")
        except BaseException:
            os.close(fd)
            raise
        if opened is None:
            os.close(fd)
            return self.scope.open_file(rel)
        return fd

    def load_manifest(self, digest: str) -> Manifest:
        return self.objects.load_manifest(digest)

    # -- the session's turns ---------------------------------------------------------

    def _session_path(self, session_id: str | None = None) -> Path:
        return self.base / "sessions" / f"{session_id or self.session_id}.json"

    def turns(self) -> list[TurnRecord]:
        try:
            raw = json.loads(self._session_path().read_text())
        except (OSError, ValueError):
            return []
        return [
            TurnRecord(t["prompt_id"], t["before"], t.get("after"), int(t.get("since_ns") or 0))
            for t in raw.get("turns", [])
        ]

    def save_turns(self, turns: Iterable[TurnRecord]) -> None:
        data = json.dumps({"turns": [t.to_dict() for t in turns]}, indent=1).encode()
        write_atomic(self._session_path(), data)

    def copy_to(self, session_id: str) -> None:
        """The session's records under another session id (a fork keeps its checkpoints)."""
        source = self._session_path()
        if source.exists():
            write_atomic(self._session_path(session_id), source.read_bytes())

    # -- rewinding ---------------------------------------------------------------------

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
        root_fd = os.open(self.root, _DIRECTORY_FLAGS)
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


class Checkpoints:
    """A session's checkpointing: snapshot before the first write of a turn, again when it
    ends. `wrap` runs around a turn's event stream; `before_write` is the tool runner's."""

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store
        self._prompt_id: str | None = None
        self._taken = False
        self._lock = asyncio.Lock()
        self._pending_after: asyncio.Future[None] | None = None

    async def before_write(self) -> None:
        async with self._lock:
            if self._prompt_id is None or self._taken:
                return
            await self.settled()
            prompt_id = self._prompt_id
            since = status_clock_ns()
            try:
                digest = await asyncio.to_thread(self.store.snapshot)
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("checkpoint before a write failed: %s", exc)
                return
            turns = self.store.turns()
            turns.append(TurnRecord(prompt_id, digest, since_ns=since))
            await asyncio.to_thread(self.store.save_turns, turns)
            self._taken = True

    async def settled(self) -> None:
        """Wait for the last turn's closing snapshot, if it is still being taken."""
        pending, self._pending_after = self._pending_after, None
        if pending is not None:
            with contextlib.suppress(Exception):
                await pending

    async def wrap(self, events: AsyncIterator[Any], content: Any = "") -> AsyncIterator[Any]:
        """The turn's events, its user message marked as a prompt a rewind can go back to
        (with the start of what the user wrote, without the context the loop adds)."""
        import uuid

        from hermes_core.events import MessageCommitted

        typed = content if isinstance(content, str) else " ".join(getattr(p, "text", "") for p in content)
        preview = " ".join(typed.split())[:PROMPT_PREVIEW_CHARS]

        self._prompt_id = None
        self._taken = False
        ended = False
        try:
            async for event in events:
                if self._prompt_id is None and isinstance(event, MessageCommitted):
                    message = event.message
                    if message.role == "user":
                        self._prompt_id = uuid.uuid4().hex
                        marker = {"prompt": self._prompt_id, "prompt_text": preview}
                        message.display = {**(message.display or {}), **marker}
                yield event
            ended = True
        finally:
            prompt_id, taken = self._prompt_id, self._taken
            self._prompt_id = None
            self._taken = False
            if taken and ended:
                # Before the prompt's response: what the user changes after it is theirs.
                await self._close_turn(prompt_id)
            elif taken:
                # A cancelled turn: in a task, which the next rewind or snapshot waits for.
                self._pending_after = asyncio.ensure_future(self._close_turn(prompt_id))

    async def _close_turn(self, prompt_id: str | None) -> None:
        try:
            digest = await asyncio.to_thread(self.store.snapshot)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("checkpoint after a turn failed: %s", exc)
            return
        turns = self.store.turns()
        for record in turns:
            if record.prompt_id == prompt_id:
                record.after = digest
        await asyncio.to_thread(self.store.save_turns, turns)
