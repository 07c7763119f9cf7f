"""The bwrap command line for one launch: a pure function of what to mount (`Mounts`), so
the local path and an editor's terminal get the same argv (core/sandbox/bwrap.py decides
what to mount).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path

from hermes_core.sandbox import caches
from hermes_core.sandbox.empty_layers import overlay_args, skeleton_args
from hermes_core.sandbox.probe import BASE_ARGS


@dataclass(slots=True)
class Mounts:
    """What one launch mounts, in the order bwrap applies it (later mounts cover earlier)."""

    writable: list[Path] = field(default_factory=list)
    overlays: list[caches.Overlay] = field(default_factory=list)
    # Caches a command does not write: their layers stacked, read-only.
    read_only_overlays: list[caches.Overlay] = field(default_factory=list)
    pinned: list[Path] = field(default_factory=list)
    read_only: list[Path] = field(default_factory=list)
    # A read-only path bound from another file: a git config without its credentials.
    substitutes: dict[Path, Path] = field(default_factory=dict)
    placeholders: list[Path] = field(default_factory=list)
    hidden_dirs: list[Path] = field(default_factory=list)
    hidden_files: list[Path] = field(default_factory=list)
    sockets: list[Path] = field(default_factory=list)  # reachable again inside hidden dirs
    private: list[Path] = field(default_factory=list)  # shared temp dirs: empty and read-only
    kept: list[Path] = field(default_factory=list)  # read-only again inside a private dir
    # Read-only folders shown through a read-only overlay of their own (under an empty
    # layer) rather than a bind: the same entries, no mountinfo parse (`overlay_views`).
    views: set[Path] = field(default_factory=set)
    # Two empty folders whose read-only overlay is an empty read-only folder cheaper than
    # a tmpfs remounted read-only (`empty_layers`); None: the tmpfs.
    empty: tuple[Path, Path] | None = None

    def targets(self, tmp: Path) -> list[Path]:
        """Every place this launch mounts something on (the private dirs aside)."""
        return [
            *self.writable,
            *(o.lower for o in (*self.overlays, *self.read_only_overlays)),
            *self.pinned,
            *self.read_only,
            *self.placeholders,
            *self.hidden_dirs,
            *self.hidden_files,
            *self.sockets,
            *self.kept,
            tmp,
        ]

    def unlayer_mount_points(self) -> None:
        """A read-only overlay cannot take a mount point it does not show: a secret inside a
        cache (`~/.cache/huggingface/token`) that the sandbox's layer covers (it removed that
        folder once, before the file existed) would fail every launch. Such a cache is seen
        as it is on the host instead: read-only all the same."""
        inside = [*self.hidden_dirs, *self.hidden_files, *self.sockets, *self.read_only, *self.placeholders]
        for layer in list(self.read_only_overlays):
            if not caches.layer_covers(layer, inside):
                continue
            self.read_only_overlays.remove(layer)
            if any(w.is_relative_to(layer.lower) for w in self.writable):
                self.overlays.append(layer)  # writable inside it: as before, its own overlay
            elif any(layer.lower.is_relative_to(w) for w in self.writable):
                self.read_only.insert(0, layer.lower)


# bwrap 0.11 reads and parses the whole /proc/self/mountinfo for each of these (to find
# the mounts beneath the target), so each costs more the more mounts exist by then.
_PARSES_MOUNTINFO = frozenset({"--bind", "--ro-bind", "--dev-bind", "--remount-ro"})


class Step:
    """One mount of the launch, with what belongs to it (an overlay's sources; a hidden
    folder's socket binds and remount, all inside it): `place` is where it mounts."""

    __slots__ = ("args", "costly", "place")

    def __init__(self, path: Path, args: list[str]) -> None:
        self.place = str(path).rstrip("/") or "/"
        self.args = args
        self.costly = not _PARSES_MOUNTINFO.isdisjoint(args)


def binds_first(steps: list[Step]) -> list[Step]:
    """`steps` reordered so that the binds and remounts come as early as they may, while
    the mount table is shortest: bwrap parses all of it for each of those, and every
    overlay and tmpfs before one makes it longer. Only steps on unrelated places change
    places: for two steps where one mounts on or inside the other's place, the order stays
    as given, so every mount still covers (or sits on) exactly what it did."""
    at: dict[str, list[int]] = {}
    for index, step in enumerate(steps):
        at.setdefault(step.place, []).append(index)
    later: list[set[int]] = [set() for _ in steps]  # what must wait for each step
    waiting = [0] * len(steps)
    for index, step in enumerate(steps):
        place = step.place
        while True:  # each place on or above this one that another step mounts on
            for other in at.get(place, ()):
                first, second = min(index, other), max(index, other)
                if first != second and second not in later[first]:
                    later[first].add(second)
                    waiting[second] += 1
            if place == "/":
                break
            place = place.rsplit("/", 1)[0] or "/"
    ready = [(not step.costly, index) for index, step in enumerate(steps) if not waiting[index]]
    heapq.heapify(ready)
    out: list[Step] = []
    while ready:
        _, index = heapq.heappop(ready)
        out.append(steps[index])
        for successor in later[index]:
            waiting[successor] -= 1
            if not waiting[successor]:
                heapq.heappush(ready, (not steps[successor].costly, successor))
    return out


def _outermost(paths: list[Path]) -> list[Path]:
    """Drop paths inside another one of the list: binding the outer one covers them."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    out: list[Path] = []
    prefixes: list[str] = []  # (string prefixes: pathlib's is_relative_to costs ~100 µs a launch here)
    for path in unique:
        text = str(path)
        if not any(text == p or text.startswith(p + "/") for p in prefixes):
            out.append(path)
            prefixes.append(text.rstrip("/"))
    return out


def _empty_read_only(empty: tuple[Path, Path] | None, path: Path, *, perms: str | None = None) -> list[str]:
    """An empty read-only folder at `path`: the empty layers' overlay where there are
    some (mode 0700, theirs), else a tmpfs remounted read-only (a bind's price)."""
    if empty is not None:
        return overlay_args(empty, path)
    mode = ["--perms", perms] if perms else []
    return [*mode, "--tmpfs", str(path), "--remount-ro", str(path)]


def launch_argv(
    bwrap: str,
    mounts: Mounts,
    *,
    argv: list[str],
    cwd: Path,
    tmp: Path,
    tmp_bytes: int,
    network: bool,
    new_session: bool,
    unset: list[str],
    environment: dict[str, str] | None = None,
) -> list[str]:
    """The bwrap command line for one launch: a pure function of what to mount, so the
    local path and an editor's terminal get the same argv. `environment`: the whole
    environment the command gets (the editor's own is cleared), instead of `unset`."""
    args: list[str] = [bwrap, *BASE_ARGS]
    if not network:
        args.append("--unshare-net")  # its own network namespace: loopback only, and up
    if new_session:
        # An editor terminal may be a tty: a new session stops TIOCSTI keystroke injection.
        args.append("--new-session")
    # Outermost first, so a cache inside a root (the home as workspace) overlays the root's
    # bind, and a root inside a cache is bound over the overlay.
    layers: list[tuple[Path, list[str]]] = [
        (p, ["--bind", str(p), str(p)]) for p in _outermost(mounts.writable)
    ]
    for layer in mounts.overlays:
        overlay = [
            "--overlay-src",
            str(layer.lower),
            "--overlay",
            str(layer.upper),
            str(layer.work),
            str(layer.lower),
        ]
        layers.append((layer.lower, overlay))
    for layer in mounts.read_only_overlays:  # the last source is the top layer
        stacked = ["--overlay-src", str(layer.lower), "--overlay-src", str(layer.upper)]
        layers.append((layer.lower, [*stacked, "--ro-overlay", str(layer.lower)]))
    # A private dir nothing is mounted inside (/var/tmp, as a rule) is the empty layers'
    # overlay: read-only at once, without the remount (a bind's price) the tmpfs needs.
    # The one that holds some (/tmp: TMPDIR's mount point, a root there) shows just their
    # empty mount points, read-only from the start.
    targets = [*mounts.targets(tmp), *mounts.private] if mounts.empty is not None else []
    remount = [] if mounts.empty is not None else list(mounts.private)
    for path in mounts.private:  # before the roots and caches inside it, which stay as they are
        kept = [p for s in mounts.sockets if s.is_relative_to(path) for p in ("--bind", str(s), str(s))]
        if mounts.empty is not None:
            prefix = str(path).rstrip("/") + "/"
            inner = _outermost([t for t in targets if str(t).startswith(prefix)])
            view = skeleton_args(mounts.empty, path, inner) if inner else overlay_args(mounts.empty, path)
            if view is not None:
                layers.append((path, [*view, *kept]))
                continue
            remount.append(path)  # no skeleton could be made: the tmpfs, as before
        layers.append((path, ["--tmpfs", str(path), *kept]))
    layers += [(path, ["--ro-bind", str(path), str(path)]) for path in mounts.kept]
    steps: list[Step] = [
        Step(path, part) for path, part in sorted(layers, key=lambda item: len(item[0].parts))
    ]
    # a mount point cannot be renamed away and replaced
    steps += [Step(path, ["--bind", str(path), str(path)]) for path in mounts.pinned]
    for path in mounts.read_only:
        if path in mounts.views and mounts.empty is not None:  # the folder on top: its own mode
            view = [
                "--overlay-src",
                str(mounts.empty[1]),
                "--overlay-src",
                str(path),
                "--ro-overlay",
                str(path),
            ]
            steps.append(Step(path, view))
        else:
            steps.append(Step(path, ["--ro-bind", str(mounts.substitutes.get(path, path)), str(path)]))
    steps += [Step(path, _empty_read_only(mounts.empty, path)) for path in mounts.placeholders]
    for path in mounts.hidden_dirs:
        sockets = [s for s in mounts.sockets if s.is_relative_to(path)]
        if not sockets:
            steps.append(Step(path, _empty_read_only(mounts.empty, path, perms="0700")))
            continue
        hidden = ["--perms", "0700", "--tmpfs", str(path)]  # mount points for the sockets
        hidden += [part for s in sockets for part in ("--bind", str(s), str(s))]
        steps.append(Step(path, [*hidden, "--remount-ro", str(path)]))
    steps += [Step(path, ["--ro-bind", "/dev/null", str(path)]) for path in mounts.hidden_files]
    steps.append(Step(tmp, ["--size", str(tmp_bytes), "--perms", "0700", "--tmpfs", str(tmp)]))
    for step in binds_first(steps):
        args += step.args
    # An editor's terminal starts from the editor's environment, which the agent never
    # sees: names dropped one by one miss what only the editor holds (its login shell's
    # tokens, a direnv of the folder), so there it is replaced whole by what a local
    # command gets (a local command's are dropped beforehand).
    if environment is not None:
        args.append("--clearenv")
        for name, value in environment.items():
            args += ["--setenv", name, value]
    else:
        for name in unset:
            args += ["--unsetenv", name]
    for path in remount:  # once every mount point inside it is made; not recursive
        args += ["--remount-ro", str(path)]
    args += ["--setenv", "TMPDIR", str(tmp), "--chdir", str(cwd), "--", *argv]
    return args
