"""Confining one session's commands in the kernel: a command plus the session's roots
becomes a bubblewrap (`bwrap`) launch that may write only inside the workspace (minus the
protected paths), sees the toolchains' caches as private overlays and a size-capped TMPDIR
of its own, cannot read the user's secrets nor reach their agents' sockets, runs under a
process limit, and optionally has no network; its environment loses the agent's own
credentials.

Whether bwrap starts here is `hermes_core.sandbox.probe`'s question, asked when a `Sandbox` is made
(never during a turn); where it cannot start, `confinement` is "unavailable" and the
approval policy asks before every command instead.

What to mount is decided in fence_mounts.py (`Sandbox.mounts`); the launch (its argv,
environment, cgroups and thread) in launches.py, what lives while commands run and the
check after each in launch_state.py; the argv is put together in bwrap_args.py, the
variables dropped hidden_env.py, the `.env` files hidden env_files.py, and why a failed
command was likely refused by the sandbox refusals.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes_core.sandbox import (
    caches,
    edit_guard,
    limits,
    memory_cap,
    planted,
    protected,
    secrets,
    stale_work_dirs,
)
from hermes_core.sandbox.alive_lock import AliveLock, alive_lock
from hermes_core.sandbox.fence_mounts import SandboxMode
from hermes_core.sandbox.launches import Launches
from hermes_core.sandbox.memory_cap import MemoryCgroup
from hermes_core.sandbox.probe import Availability, bundled_bwrap, overlays_work, probe
from hermes_core.sandbox.refusals import explain_refusal

if TYPE_CHECKING:
    from hermes_core.config import Settings
    from hermes_core.fence.scope import WorkspaceScope
    from hermes_core.sandbox import edit_globs  # loaded by a session with such a rule

Confinement = Literal["sandboxed", "off", "unavailable"]

DEFAULT_CACHES = caches.DEFAULT_CACHES
DEFAULT_MAX_PROCESSES = 2048  # threads count too: a parallel build with a JVM fits
DEFAULT_TMP_MB = 1024


class Sandbox(Launches):
    """The confinement of one session's commands."""

    # A local `bash -c` launch sends its mounts on a pipe while bwrap starts (`late_args`);
    # False: on bwrap's command line (the benchmark compares both).
    mounts_on_a_pipe = True

    def __init__(
        self,
        scope: WorkspaceScope,
        *,
        mode: SandboxMode = "workspace-write",
        network: bool = True,
        caches: tuple[str, ...] = DEFAULT_CACHES,
        writable: tuple[str, ...] = (),  # really writable (the user's choice): changes carry out
        hidden: tuple[Path, ...] = (),  # besides the secrets: the agent's own home
        hidden_env: frozenset[str] = frozenset(),  # besides CREDENTIAL_ENV: fallbacks' key variables
        state: Path | None = None,  # where the caches' overlays live; None: caches read-only
        ssh_agent: bool = False,
        sockets: tuple[str, ...] = (),  # host sockets under /run kept reachable (the user's choice)
        max_processes: int = DEFAULT_MAX_PROCESSES,
        tmp_mb: int = DEFAULT_TMP_MB,
        memory_mb: int | None = None,  # the session's commands together; 0: half the RAM; None: no cap
        bwrap: str | None = None,
        home: Path | None = None,
        alive: AliveLock | None = None,  # held shared by each launch (None: launches untracked)
    ) -> None:
        self.scope = scope
        self.alive = alive
        self.mode: SandboxMode = mode
        self.network = network
        self.caches = caches
        self.writable = writable
        self.hidden = tuple(p.resolve() for p in hidden)
        self.hidden_env = hidden_env
        self.state = state
        self.ssh_agent = ssh_agent
        self.sockets = sockets
        self.max_processes = max_processes
        self.tmp_mb = tmp_mb
        self.memory_mb = memory_mb
        self._memory: MemoryCgroup | Literal[False] | None = False  # False: not made yet
        self.bwrap = bwrap if bwrap is not None else bundled_bwrap()
        self.home = (home if home is not None else Path.home()).resolve()
        self._cgroup: limits.PidsCgroup | Literal[False] | None = False  # False: not looked for yet
        self._thread: limits.LaunchThread | None = None
        # Each made once however many threads launch at once (a reply's parallel reads,
        # a hook beside a command): a second one would be left behind, or removed while a
        # launch that named it moves in. Shared with `read_only_view`'s copy.
        self._making = threading.RLock()
        self._own_code = protected.own_code()
        self._own_sources = protected.own_sources()  # kept visible where a temp dir is emptied
        # The launch state (launch_state.py): touched from the event loop's thread alone.
        self._placeholders: set[Path] = set()  # removed after the session's last command
        self._seen_placeholders: set[Path] = set()  # removed with the session
        self._running = 0  # launched, not yet seen to end
        self._work_dirs: list[Path] = []  # the running commands' own overlay work dirs
        self._watch: planted.Watch | None = None  # what the running commands may plant
        if mode == "workspace-write":  # the after-command check's one walk, before the first command
            planted.prepare(scope.roots)
        self._undone: list[str] = []  # what `planted.undo` undid, not yet told the model
        # The paths your deny and ask `Edit(…)` rules name (set by the session), and what
        # they were when the running commands launched.
        self.edit_guarded: tuple[edit_guard.Guarded, ...] = ()
        self._edit_before: edit_guard.Snapshot | None = None
        # Your wildcard `Edit(…)` rules (set by the session; None: none, nothing paid), and
        # what the last command launched with read-only of what they match.
        self.edit_globs: edit_globs.Globs | None = None
        self.glob_guarded: tuple[edit_guard.Guarded, ...] = ()
        self._agent_env: list[str] | None = None
        self._hidden_names: dict[str, bool] = {}
        # What the first turn tells the user (once) about this session's sandbox; the turn
        # clears it once said. Worked out here (probing bwrap once per process) so that a
        # turn reads a field instead of probing: a turn without commands runs no sandbox code.
        self.notice: str | None = None
        if self.confinement == "unavailable":
            self.notice = (
                f"The command sandbox cannot start ({self.availability.reason}). "
                "Every command will ask for approval before it runs, in every mode."
            )
        if self.confinement == "sandboxed" and self.state is not None and self.bwrap is not None:
            overlays_work(self.bwrap)  # asked once per process, here rather than in a turn
            stale_work_dirs.sweep_once(self.state)  # a killed agent's, never given back
        if self.confinement == "sandboxed" and self._home_in_a_root_holds_something():
            self.notice = (
                "This session's folder contains your home folder. The sandbox still hides your "
                "secrets there (~/.ssh, ~/.aws, ~/.netrc, .env files, shell histories, ...) and "
                "keeps your shell start-up files, tool installs and git's hooks and config "
                "read-only; caches are private to the sandbox."
            )

    @classmethod
    def from_settings(cls, settings: Settings, scope: WorkspaceScope) -> Sandbox:
        return cls(
            scope,
            mode=settings.sandbox,
            network=settings.sandbox_network == "on",
            caches=tuple(settings.sandbox_caches),
            writable=tuple(settings.sandbox_writable),
            hidden=(settings.home,),
            hidden_env=frozenset(e.api_key_env for e in settings.fallback if e.api_key_env),
            state=settings.home / "sandbox" / "caches",
            ssh_agent=settings.sandbox_ssh_agent,
            sockets=tuple(settings.sandbox_sockets),
            max_processes=settings.sandbox_max_processes,
            tmp_mb=settings.sandbox_tmp_mb,
            memory_mb=settings.sandbox_memory_mb,
            bwrap=settings.sandbox_bwrap,
            alive=alive_lock(settings.home),
        )

    def _home_in_a_root_holds_something(self) -> bool:
        """Whether a root contains the home folder and it holds a secret or a start-up file
        the list names: then the user hears once that those stay hidden or read-only."""
        if not any(self.home == root or self.home.is_relative_to(root) for root in self.scope.roots):
            return False
        dirs, files = secrets.home_secrets(self.home)
        named = [p for p in protected.home_protected(self.home) if p.resolve() not in self.hidden]
        return bool(dirs or files or named)

    # -- state -----------------------------------------------------------------------

    @property
    def availability(self) -> Availability:
        return probe(self.bwrap)

    @property
    def confinement(self) -> Confinement:
        if self.mode == "off":
            return "off"
        return "sandboxed" if self.availability.ok else "unavailable"

    def describe(self) -> str:
        """One line for --check and the approval card."""
        if self.mode == "off":
            return 'off (sandbox = "off"): commands run unconfined'
        availability = self.availability
        if not availability.ok:
            return f"cannot start: {availability.reason}. Every command will ask before it runs unconfined"
        where = "the workspace" if self.mode == "workspace-write" else "nothing but a private temp dir"
        net = "network on" if self.network else "network off"
        limit = (
            f"at most {self.max_processes} processes" if limits.prlimit() else "no process limit (no prlimit)"
        )
        private = self.bwrap is not None and overlays_work(self.bwrap)
        cache = "caches private" if private else "caches read-only (no overlay here)"
        memory = "no memory cap (no writable memory cgroup)"
        if self.memory_mb is not None and memory_cap.writable():
            memory = f"memory capped at {memory_cap.cap_bytes(self.memory_mb) // 2**20} MiB a session"
        return (
            f"{self.mode}: commands may write to {where} (git's config and hooks read-only), {cache}; "
            f"secrets and agent sockets hidden; {limit}; {memory}; {net} ({availability.reason})"
        )

    # -- after the fact --------------------------------------------------------------

    def explain_refusal(self, output: str) -> str | None:
        """Why the sandbox, not the command, is likely to blame for a failure, or None."""
        if isinstance(self._memory, MemoryCgroup) and self._memory.killed_since_last_look():
            return self._memory.why()
        guarded = edit_guard.explain(output, (*self.edit_guarded, *self.glob_guarded), self.scope.roots)
        if guarded is not None:
            return guarded
        return explain_refusal(output, mounts=self.mounts, temp_dir=self.temp_dir, network=self.network)


def check_line(settings: Settings) -> tuple[bool | None, str, str]:
    """--check's line about the sandbox: (ok; None when turned off), label, detail."""
    from hermes_core.fence.scope import WorkspaceScope

    sandbox = Sandbox.from_settings(settings, WorkspaceScope(Path.cwd()))
    ok = {"sandboxed": True, "off": None, "unavailable": False}[sandbox.confinement]
    return ok, "sandbox", sandbox.describe()
