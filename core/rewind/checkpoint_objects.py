"""Where checkpoints keep file contents and manifests: append-only packs, by content hash.

A snapshot's new contents go into one pack (`packs/<id>.pack`, zlib-compressed blobs end to
end) with its index (`packs/<id>.idx`, hash -> offset and length) written after it, so a
first snapshot of 10,000 files writes two files, not 10,000, and two sessions writing at
once never touch the same file. A manifest (path -> content hash and mode) is stored as
the difference from a full one (its base) once one exists, so a later turn's manifest
costs what changed, not the whole tree. The stat cache (size, mtimes, inode per path)
lets a new session's first snapshot skip re-reading files nobody touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import tempfile
import zlib
from pathlib import Path
from typing import Any

Entry = tuple[str, int]  # content hash ("" when too large to keep), file mode
Manifest = dict[str, Entry]
Seen = dict[str, tuple[int, int, int, int, str, int]]  # size, mtime_ns, ctime_ns, inode, hash, mode

PACK_BYTES = 64 * 1024 * 1024  # a pack is written once this much waits in memory
FULL_EVERY = 0.5  # a difference larger than this share of its base is stored whole instead


class ObjectStore:
    def __init__(self, base: Path) -> None:
        self.base = base
        self._index: dict[str, tuple[str, int, int]] | None = None  # hash -> pack, offset, length
        self._pending: dict[str, bytes] = {}  # compressed, not yet in a pack
        self._pending_bytes = 0
        self._manifests: dict[str, Manifest] = {}
        self._full: tuple[str, Manifest] | None = None  # the base later manifests differ from

    # -- contents ----------------------------------------------------------------------

    def has(self, digest: str) -> bool:
        return digest in self._pending or digest in self.index()

    def add(self, digest: str, data: bytes) -> None:
        if not self.has(digest):
            blob = self._pending[digest] = zlib.compress(data, 1)
            self._pending_bytes += len(blob)
            if self._pending_bytes > PACK_BYTES:
                self.flush()

    def read(self, digest: str) -> bytes:
        if digest in self._pending:
            return zlib.decompress(self._pending[digest])
        pack, offset, length = self.index()[digest]
        with open(self.base / "packs" / f"{pack}.pack", "rb") as handle:
            handle.seek(offset)
            return zlib.decompress(handle.read(length))

    def flush(self) -> None:
        """Write what was added since the last flush as one pack and its index."""
        if not self._pending:
            return
        pack = secrets.token_hex(8)
        offsets: dict[str, list[int]] = {}
        chunks: list[bytes] = []
        position = 0
        for digest, blob in self._pending.items():
            offsets[digest] = [position, len(blob)]
            chunks.append(blob)
            position += len(blob)
        folder = self.base / "packs"
        write_atomic(folder / f"{pack}.pack", b"".join(chunks))
        write_atomic(folder / f"{pack}.idx", json.dumps(offsets, separators=(",", ":")).encode())
        index = self.index()
        for digest, (offset, length) in offsets.items():
            index[digest] = (pack, offset, length)
        self._pending = {}
        self._pending_bytes = 0

    def index(self) -> dict[str, tuple[str, int, int]]:
        if self._index is None:
            index: dict[str, tuple[str, int, int]] = {}
            folder = self.base / "packs"
            for idx in sorted(folder.glob("*.idx")) if folder.is_dir() else ():
                pack = idx.stem
                with contextlib.suppress(OSError, ValueError):
                    for digest, (offset, length) in json.loads(idx.read_bytes()).items():
                        index[digest] = (pack, offset, length)
            self._index = index
        return self._index

    # -- manifests ---------------------------------------------------------------------

    def save_manifest(self, manifest: Manifest) -> str:
        if self._full is not None:
            base_id, full = self._full
            changes: dict[str, Entry | None] = {rel: e for rel, e in manifest.items() if full.get(rel) != e}
            changes.update({rel: None for rel in full.keys() - manifest.keys()})
            if len(changes) <= FULL_EVERY * max(len(full), 1):
                return self._store_manifest({"base": base_id, "changes": changes}, manifest)
        digest = self._store_manifest({"base": None, "changes": manifest}, manifest)
        self._full = (digest, manifest)
        return digest

    def _store_manifest(self, stored: dict[str, Any], manifest: Manifest) -> str:
        data = json.dumps(stored, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(data).hexdigest()
        path = self.base / "manifests" / f"{digest}.z"
        if not path.exists():
            write_atomic(path, zlib.compress(data, 6))
        self._manifests[digest] = manifest
        return digest

    def load_manifest(self, digest: str) -> Manifest:
        cached = self._manifests.get(digest)
        if cached is not None:
            return cached
        stored = json.loads(zlib.decompress((self.base / "manifests" / f"{digest}.z").read_bytes()))
        manifest: Manifest = dict(self.load_manifest(stored["base"])) if stored["base"] else {}
        for rel, entry in stored["changes"].items():
            if entry is None:
                manifest.pop(rel, None)
            else:
                manifest[rel] = (entry[0], int(entry[1]))
        self._manifests[digest] = manifest
        if stored["base"] is None and self._full is None:
            self._full = (digest, manifest)
        return manifest

    # -- what the last scan saw ----------------------------------------------------------

    def load_seen(self) -> Seen:
        try:
            raw = json.loads(zlib.decompress((self.base / "stat-cache.z").read_bytes()))
        except (OSError, ValueError, zlib.error):
            return {}
        return {rel: tuple(values) for rel, values in raw.items()}

    def save_seen(self, seen: Seen) -> None:
        data = json.dumps(seen, separators=(",", ":")).encode()
        write_atomic(self.base / "stat-cache.z", zlib.compress(data, 1))


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
