"""Toolchain caches inside the sandbox: each one an overlay whose upper layer lives under
the agent's home, so builds keep (and grow) their cache across commands and sessions while
the user's own cache stays byte-for-byte unchanged. A package the sandbox rewrites there
(`~/.cargo/registry/src/*/build.rs`, a gradle wrapper, a pre-commit hook env) is seen only
by later sandboxed commands, never by the user's next build outside.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CACHES: tuple[str, ...] = (
    "~/.cache",  # pip, go build, uv, pre-commit, deno, huggingface, ...
    "~/.npm",
    "~/.yarn",
    "~/.local/share/pnpm",
    "~/.bun/install/cache",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/go/pkg/mod",
    "~/.m2/repository",
    "~/.gradle",
    "~/.nuget/packages",
)


@dataclass(frozen=True, slots=True)
class Overlay:
    lower: Path  # the user's cache, read-only underneath
    upper: Path  # the sandbox's changes, under the agent's home
    work: Path  # overlayfs's scratch dir, on the upper's file system


def expand(raw: str, home: Path) -> Path:
    return home / raw[2:] if raw.startswith("~/") else Path(raw)


def overlays(caches: tuple[str, ...], home: Path, state: Path) -> list[Overlay]:
    """One overlay per cache that exists (as a real directory), its layers created on first
    use (and again if they were deleted meanwhile: both are looked at before every command)."""
    out = []
    for raw in caches:
        layer = _layer(raw, home, state)
        try:
            if not stat.S_ISDIR(os.stat(layer.lower).st_mode):
                continue
        except (OSError, ValueError):
            continue
        if not os.path.isdir(layer.work):
            layer.upper.mkdir(parents=True, exist_ok=True, mode=0o700)
            layer.work.mkdir(parents=True, exist_ok=True, mode=0o700)
        out.append(layer)
    return out


@functools.lru_cache(maxsize=256)
def _layer(raw: str, home: Path, state: Path) -> Overlay:
    """Where a cache's layers live: named after the cache's path, so a renamed home or a
    second user never shares layers. (Only names: worked out once.)"""
    lower = expand(raw, home)
    tag = hashlib.sha256(str(lower).encode()).hexdigest()[:12]
    base = state / f"{lower.name.lstrip('.') or 'root'}-{tag}"
    return Overlay(lower, base / "upper", base / "work")


@dataclass(slots=True)
class CacheMounts:
    """How one command sees the caches: `writable` ones as private overlays; `read_only`
    ones as the sandbox's own view (the user's cache under the sandbox's layer), read-only:
    no work dir to prepare and nothing to sync at unmount; `bound` ones (no layer of the
    sandbox's yet) bound read-only where a writable root holds them."""

    writable: list[Overlay]
    read_only: list[Overlay]
    bound: list[Path]


def split(every: list[Overlay], need: frozenset[str] | None, home: Path, writable: list[Path]) -> CacheMounts:
    """The caches a command writes (`need`: default caches by name, None for all; a cache
    the user added counts for any command that writes one) keep a writable overlay; the
    others are read-only, seen as later sandboxed commands see them. A cache holding a
    writable place keeps its overlay (a read-only bind would cover that place)."""
    if need is None:
        return CacheMounts(every, [], [])
    wanted = _expanded(need, home)
    defaults = _expanded(DEFAULT_CACHES, home)
    out = CacheMounts([], [], [])
    for layer in every:
        if layer.lower in wanted or (need and layer.lower not in defaults):
            out.writable.append(layer)
        elif _has_entries(layer.upper):
            (out.writable if index_on() else out.read_only).append(layer)
        elif not any(layer.lower.is_relative_to(w) for w in writable):
            continue  # read-only already: the home's read-only view
        elif any(w.is_relative_to(layer.lower) for w in writable):
            out.writable.append(layer)
        else:
            out.bound.append(layer.lower)
    return out


@functools.lru_cache(maxsize=64)
def _expanded(raws: frozenset[str] | tuple[str, ...], home: Path) -> frozenset[Path]:
    """The caches' paths under `home` (only names: worked out once per list)."""
    return frozenset(expand(raw, home) for raw in raws)


def layer_covers(layer: Overlay, paths: list[Path]) -> bool:
    """Whether the sandbox's layer hides one of `paths` inside the cache from the read-only
    view (a whiteout, a folder made anew on its way): a mount point there would be missing."""
    prefix = f"{layer.lower}{os.sep}"
    for path in paths:
        text = str(path)
        if not text.startswith(prefix):
            continue
        step = layer.upper
        parts = text[len(prefix) :].split(os.sep)
        for depth, part in enumerate(parts, 1):
            step = step / part
            try:
                info = os.lstat(step)
            except OSError:
                break  # the layer holds nothing further on: the user's cache shows through
            if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                return True  # a whiteout: removed in the sandbox's view
            if stat.S_ISDIR(info.st_mode):
                if _opaque(step):
                    return True  # made anew: the user's entries below do not show
            elif depth < len(parts):
                return True  # not a folder on the way
    return False


def _opaque(folder: Path) -> bool:
    for name in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(folder, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


@functools.cache
def index_on() -> bool:
    """Whether overlayfs's `index` feature is on: then a layer that another command's
    overlay writes cannot be mounted as a read-only layer (EBUSY), so none is."""
    try:
        return Path("/sys/module/overlay/parameters/index").read_text().strip() == "Y"
    except OSError:
        return False
