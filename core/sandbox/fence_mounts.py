"""What one sandboxed launch mounts, worked out from the file system as it is before each
command (`FenceMounts.mounts`): the roots and `sandbox_writable` places writable, the caches
as private overlays (or read-only), git's and the editors' folders read-only, placeholders
where they are missing, the shared temp dirs emptied, the secrets and the host's sockets
hidden. `Sandbox` (bwrap.py) is made of it; bwrap_args.py turns the result into the argv.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes_core.sandbox import caches, edit_guard, git_credentials, listing, protected, secrets
from hermes_core.sandbox.bwrap_args import Mounts
from hermes_core.sandbox.cache_needs import ALL, CacheNeed
from hermes_core.sandbox.emptied import Emptied, inside_any
from hermes_core.sandbox.empty_layers import usable_layers
from hermes_core.sandbox.env_files import env_files
from hermes_core.sandbox.hidden_env import named_sockets
from hermes_core.sandbox.host_sockets import host_sockets
from hermes_core.sandbox.index_configs import index_configs
from hermes_core.sandbox.mount_points import MOUNT_POINTS
from hermes_core.sandbox.overlay_views import viewable
from hermes_core.sandbox.probe import overlays_work

if TYPE_CHECKING:
    from hermes_core.fence.scope import WorkspaceScope

logger = logging.getLogger(__name__)

SandboxMode = Literal["workspace-write", "read-only", "off"]

# Sockets that hand out root on the host: reachable through a read-only bind otherwise.
HOST_SOCKETS: tuple[str, ...] = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    # systemd's bus: a command running as root could stop services or reboot through it.
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    # systemd's own socket (root: `systemd-run CMD` starts CMD outside the sandbox) and snapd's.
    "/run/systemd/private",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
)
# Where the user's other programs leave their sockets: tmux (`/tmp/tmux-UID/default`),
# emacs and nvim servers, VS Code's IPC, X11, a dbus-launch bus, screen. Connecting needs no
# write access, and a tmux server runs `new-window CMD` as the user, outside any sandbox: each
# command gets these temp dirs empty and read-only instead, the roots inside them kept.
SHARED_TEMP_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp")
SOCKET_DIRS: tuple[str, ...] = ("/run/screen", "/var/run/screen")


class FenceMounts:
    """The mounts part of a `Sandbox`: what each launch mounts, and the placeholders bwrap
    leaves behind for them."""

    scope: WorkspaceScope
    mode: SandboxMode
    writable: tuple[str, ...]
    hidden: tuple[Path, ...]
    state: Path | None
    ssh_agent: bool
    sockets: tuple[str, ...]
    bwrap: str | None
    home: Path
    caches: tuple[str, ...]
    _own_code: list[Path]
    _own_sources: list[Path]
    _placeholders: set[Path]
    _seen_placeholders: set[Path]
    _running: int  # launches counted as running (launch_state.py)
    edit_guarded: tuple[edit_guard.Guarded, ...]
    glob_guarded: tuple[edit_guard.Guarded, ...]  # what the wildcard `Edit(…)` rules match now

    def is_secret(self, path: Path) -> bool:
        """Whether read_file and search must refuse this resolved path (the same list the
        sandbox hides from commands, plus the agent's own home)."""
        return secrets.is_secret_path(path, home=self.home, extra=(*self.hidden, *secrets.relocated()))

    def mounts(self, need: CacheNeed = ALL) -> Mounts:
        """What the next command mounts, from the file system as it is now. `need`: the
        caches that get an overlay (`cache_needs`); the others stay read-only."""
        roots = self.scope.roots
        out = Mounts()
        read_only_caches: list[Path] = []
        folders: list[Path] = []  # git's and the editors' read-only folders: maybe overlay views
        if self.mode == "workspace-write":
            out.writable += roots
            out.writable += self._existing(self.writable)
            if self.state is not None and self.bwrap is not None and overlays_work(self.bwrap):
                every = caches.overlays(self.caches, self.home, self.state)
                cache_mounts = caches.split(every, need, self.home, out.writable)
                out.overlays, out.read_only_overlays = cache_mounts.writable, cache_mounts.read_only
                read_only_caches = cache_mounts.bound
        changeable = [str(p) for p in (*out.writable, *(o.lower for o in out.overlays))]

        def inside_changeable(path: Path) -> bool:
            text = str(path)
            return any(text == w or text.startswith(w + os.sep) for w in changeable)

        if self.mode == "workspace-write":
            self._disarm()
            for root in roots:
                guard = self._git_guard(root)
                out.pinned += [p for p in guard.pinned if inside_changeable(p)]
                guarded = [p for p in guard.read_only if inside_changeable(p)]
                out.read_only += guarded
                folders += guarded
                for path in guard.placeholders:
                    if inside_changeable(path):
                        out.placeholders.append(path)
                        self._remove_when_done(path, per_command=path not in guard.inner_placeholders)
                for path in guard.missing_config:
                    if inside_changeable(path) and protected.create_missing_config(path):
                        out.read_only.append(path)
                for path in guard.file_placeholders:
                    if inside_changeable(path):
                        out.hidden_files.append(path)  # an empty read-only file: git includes nothing
                        self._remove_when_done(path)
                editors = protected.editor_guard(root)
                shielded = [p for p in editors.read_only if inside_changeable(p)]
                out.read_only += shielded
                folders += shielded
                for path in editors.placeholders:
                    if inside_changeable(path):
                        out.placeholders.append(path)
                        # Kept until the session ends: made and removed around each
                        # command, two more directory changes cost ~1 ms a launch.
                        self._remove_when_done(path, per_command=False)
            # Your deny and ask `Edit(…)` rules' paths: read-only, as for the file tools.
            out.read_only += [p for p in edit_guard.read_only(self.edit_guarded) if inside_changeable(p)]
            # A wildcard's match that is a link is not followed: what it leads to is written
            # by its own name with the file tools too, and `all.pem -> .` would make the whole
            # root read-only. The link itself is kept by `edit_guard.undo`.
            out.read_only += [
                g.path for g in self.glob_guarded if not os.path.islink(g.path) and inside_changeable(g.path)
            ]
        # A cache left without its overlay inside a writable root (the home as a root):
        # read-only, like everywhere else; first, so paths bound inside it still apply.
        out.read_only[:0] = read_only_caches
        for path in (*self._own_code, *protected.home_protected(self.home)):
            if inside_changeable(path):
                out.read_only.append(path)
        self._hide_git_credentials(out)
        out.private = _private_temp_dirs([*changeable, *map(str, roots)])
        private = [str(p) for p in out.private]
        # What stays visible (read-only) inside an emptied temp dir: the roots of a
        # read-only session, the home folder, and the agent's own installation (a checkout
        # or venv under /tmp: its interpreter runs the hooks and the user's tests), as
        # everywhere else.
        out.kept = [
            path
            for path in (*roots, self.home, *self._own_code, *self._own_sources)
            if inside_any(str(path), private) and not inside_changeable(path)
        ]
        exposed = [Path(p) for p in changeable] + list(out.kept)
        hidden_dirs, hidden_files = self._secrets(roots, Emptied(out.private, exposed))
        out.hidden_dirs = hidden_dirs
        out.hidden_files += hidden_files
        agent = self.reachable_ssh_agent()
        if agent is not None:
            out.sockets.append(agent.resolve())
        out.unlayer_mount_points()
        if self.bwrap is not None and overlays_work(self.bwrap):
            out.empty = usable_layers(self.bwrap, out.private)
        if out.empty is not None:
            # (not the empty mount points bwrap left for our own placeholders: those go
            # when the session ends, and are not in use as an overlay's layer then)
            mine = self._seen_placeholders
            out.views = {p for p in folders if p not in mine and p not in out.substitutes and viewable(p)}
        return out

    def _git_guard(self, root: Path) -> protected.GitGuard:
        """The root's git guard. An empty `.git` is no repository to git: taken for one, it
        was bound writable (a sandboxed `git init` wrote there) and got a `config` and hook
        folders that no clean-up removed. One of this process's mount points (a command of
        this session or another runs with it mounted) counts as missing, as it was when
        that command launched; any other (a killed agent's mount point, or another agent
        process's in use) is bound read-only and left as it is."""
        dotgit = root / ".git"
        if _empty_directory(dotgit):
            if MOUNT_POINTS.held(dotgit):
                return protected.GitGuard(placeholders=[dotgit])
            return protected.GitGuard(read_only=[dotgit])
        return protected.git_guard(root)

    def _disarm(self) -> None:
        for root in self.scope.roots:
            aside = protected.disarm_planted_commondir(root)
            if aside is not None:
                logger.warning("a sandboxed command planted %s/.git/commondir: moved to %s", root, aside)

    def _remove_when_done(self, placeholder: Path, *, per_command: bool = True) -> None:
        """bwrap leaves the empty mount point behind on the host: removed with the session
        (if still empty; a `git init` the user approved afterwards filled it), and also after
        each command when it would be seen (`per_command`: a `.git` where there was none, a
        missing config file). An empty `modules` or `worktrees` inside an existing `.git`
        (git ignores both when empty) stays until the session ends: removing and making it
        again cost each command two directory changes in `.git`, which also invalidated the
        cached listings of `.git` for the next launch."""
        if self._running > 0:  # a launch mounts it (not a look at the mounts after the fact)
            MOUNT_POINTS.hold(placeholder, id(self))
        if placeholder in self._seen_placeholders:
            return
        self._seen_placeholders.add(placeholder)
        if per_command:
            self._placeholders.add(placeholder)
        weakref.finalize(self, MOUNT_POINTS.release, [placeholder], id(self))

    def _existing(self, raws: tuple[str, ...]) -> list[Path]:
        out = []
        for raw in raws:
            try:
                resolved = caches.expand(raw, self.home).resolve(strict=True)
            except (OSError, RuntimeError):
                continue
            if resolved.is_dir() and not self.is_secret(resolved):
                out.append(resolved)
        return out

    def _hide_git_credentials(self, out: Mounts) -> None:
        """Bind a copy without credentials over each git config that holds some: the roots'
        (read-only already) and the user's own (`git_credentials`)."""
        configs = [p for p in out.read_only if p.name in ("config", "config.worktree")]
        configs += [self.home / ".gitconfig", self.home / ".config" / "git" / "config"]
        configs += index_configs(self.home, os.environ)  # pip.conf's `index-url` with its login
        for config in configs:
            copy = git_credentials.redacted_copy(config)
            if copy is not None:
                if config not in out.read_only:
                    out.read_only.append(config)
                out.substitutes[config] = copy

    def _secrets(self, roots: tuple[Path, ...], emptied: Emptied) -> tuple[list[Path], list[Path]]:
        """What to hide: the secrets that exist and are in view. One inside an emptied temp
        dir (and not in a root or kept path there) is gone already, so neither looked for
        in a busy /tmp nor mounted over."""
        dirs, files = secrets.home_secrets(self.home)
        dirs += [p for p in self.hidden if p.is_dir()]
        moved = secrets.relocated()  # `GNUPGHOME=/data/gnupg`: what exists there, either kind
        dirs += moved
        files += moved
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime:
            dirs.append(Path(runtime))  # gpg-agent, the keyring, the session bus, ...
        # The same, where the editor's environment does not name it.
        dirs += [Path(f"/run/user/{os.getuid()}"), *map(Path, SOCKET_DIRS)]
        dirs += _ssh_agent_dirs(emptied)
        if not self.ssh_agent:
            sock = os.environ.get("SSH_AUTH_SOCK")
            if sock:
                files.append(Path(sock))
        files += [Path(p) for p in HOST_SOCKETS]
        files += host_sockets(self.sockets, skip=[str(d) for d in dirs])  # every daemon's in /run
        files += named_sockets(os.environ)
        files += env_files(self.home, roots, skip=emptied.hides_children)
        hidden_dirs: list[Path] = []
        for path in secrets.existing(Path("/"), tuple(str(d) for d in dirs), want_dir=True):
            # Hiding a dir that holds a root would hide the workspace itself.
            if not any(inside_any(str(root), [str(path)]) for root in roots):
                hidden_dirs.append(path)
        # (a tmpfs needs an existing mount point: what does not exist has nothing to hide)
        hidden_files = secrets.existing(Path("/"), tuple(str(f) for f in files), want_dir=False)
        if self.ssh_agent:
            # The ssh agent's socket stays reachable where it is, even inside a hidden dir.
            sock = os.environ.get("SSH_AUTH_SOCK")
            if sock and Path(sock).exists():
                hidden_files = [f for f in hidden_files if f != Path(sock).resolve()]
        # A file inside a hidden dir is gone already (and bwrap cannot make its mount point
        # in that read-only tmpfs: a socket named in the environment may sit there).
        dir_texts = [str(d) for d in hidden_dirs]
        hidden_files = [f for f in hidden_files if not inside_any(str(f), dir_texts)]
        hidden_dirs = [d for d in hidden_dirs if not emptied.hides(d)]
        hidden_files = [f for f in hidden_files if not emptied.hides(f)]
        return sorted(set(hidden_dirs)), sorted(set(hidden_files))

    def reachable_ssh_agent(self) -> Path | None:
        sock = os.environ.get("SSH_AUTH_SOCK")
        return Path(sock) if self.ssh_agent and sock and Path(sock).exists() else None


def _private_temp_dirs(kept: list[str]) -> list[Path]:
    """The shared temp dirs that each command gets empty: all that exist, but one that is
    (or lies inside) a root or writable place, which must stay as it is."""
    out: list[Path] = []
    for raw in {*SHARED_TEMP_DIRS, tempfile.gettempdir()}:
        path = Path(os.path.realpath(raw))
        if path.is_dir() and not inside_any(str(path), kept):
            out.append(path)
    return sorted(set(out))


def _empty_directory(path: Path) -> bool:
    """A real directory (not a link to one) with nothing in it."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _ssh_agent_entry(name: str, is_dir: bool) -> bool:
    return is_dir and name.startswith("ssh-")


def _ssh_agent_dirs(emptied: Emptied) -> list[Path]:
    """`ssh-agent`'s default socket dirs (`/tmp/ssh-XXXX/agent.N`), started by hand."""
    folder = Path(tempfile.gettempdir())
    if emptied.hides_children(folder):
        return []
    return [folder / name for name, _ in listing.entries_starting(str(folder), "ssh-", _ssh_agent_entry)]
