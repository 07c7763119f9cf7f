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
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from hermes_core.fence.beneath import open_beneath
from hermes_core.fence.scope import NotRegularFile, WorkspaceError, WorkspaceScope, opened_path
from hermes_core.rewind.checkpoint_objects import Manifest, ObjectStore, Seen, write_atomic
from hermes_core.rewind.file_list import (
    DIRECTORY_FLAGS,
    MAX_FILE_BYTES,
    MAX_FILES,
    list_files,
    status_clock_ns,
)
from hermes_core.rewind.rewinding import RestoreReport as RestoreReport  # the rewind's answer, named here too
from hermes_core.rewind.rewinding import Rewinding, TurnRecord
from hermes_core.sandbox.secrets import is_env_file, is_secret_path

log = logging.getLogger(__name__)

PROMPT_PREVIEW_CHARS = 200
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)


def project_key(cwd: str | Path) -> str:
    return hashlib.sha256(os.path.realpath(cwd).encode()).hexdigest()[:24]


class CheckpointStore(Rewinding):
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
        root_fd = os.open(self.root, DIRECTORY_FLAGS)
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
