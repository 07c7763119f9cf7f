"""Confining one session's commands in the kernel: a command plus the session's roots
becomes a bubblewrap (`bwrap`) launch that may write only inside the workspace (minus the
protected paths), sees the toolchains' caches as private overlays and a size-capped TMPDIR
of its own, cannot read the user's secrets nor reach their agents' sockets, runs under a
process limit, and optionally has no network; its environment loses the agent's own
credentials.

Whether bwrap starts here is `hermes_core.sandbox.probe`'s question, asked when a `Sandbox` is made
(never during a turn); where it cannot start, `confinement` is "unavailable" and the
approval policy asks before every command instead.

What to mount is decided in fence_mounts.py (`Sandbox.mounts`); the argv it becomes is bwrap_args.py, the
variables dropped hidden_env.py, the `.env` files hidden env_files.py, and why a failed
command was likely refused by the sandbox refusals.py.
"""

from __future__ import annotations

import atexit
import copy
import functools
import itertools
import logging
import os
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes_core.sandbox import (
    caches,
    edit_guard,
    limits,
    memory_cap,
    planted,
    protected,
    seccomp,
    secrets,
    stale_work_dirs,
)
from hermes_core.sandbox.alive_lock import AliveLock, alive_lock
from hermes_core.sandbox.bwrap_args import launch_argv
from hermes_core.sandbox.cache_needs import ALL, CacheNeed, cache_need
from hermes_core.sandbox.fence_mounts import FenceMounts, SandboxMode, rmdir_quietly
from hermes_core.sandbox.hidden_env import (
    AGENT_ENV,
    CREDENTIAL_NAMES,
    SOCKET_ENV,
    credential_values,
    hides_variable,
    secret_variables,
)
from hermes_core.sandbox.memory_cap import MemoryCgroup, cap_bytes
from hermes_core.sandbox.pid_one import AS_PID_1, keep_shell
from hermes_core.sandbox.probe import Availability, bundled_bwrap, overlays_work, probe
from hermes_core.sandbox.refusals import explain_refusal
from hermes_core.sandbox.work_dirs import WORK_DIRS

if TYPE_CHECKING:
    from hermes_core.config import Settings
    from hermes_core.fence.scope import WorkspaceScope

logger = logging.getLogger(__name__)

Confinement = Literal["sandboxed", "off", "unavailable"]

DEFAULT_CACHES = caches.DEFAULT_CACHES
DEFAULT_MAX_PROCESSES = 2048  # threads count too: a parallel build with a JVM fits
DEFAULT_TMP_MB = 1024

_counter = itertools.count(1)


class Sandbox(FenceMounts):
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
        # The launch state below (`_running` and what lives while it is above zero) is
        # touched from the event loop's thread alone: local commands are counted and
        # uncounted there (their exit reaches the loop: `child._watch_exit`), an editor's
        # terminals and hooks run there, and the file tools' `accept_written` follows their
        # worker thread there. The one launch made in a worker thread, an image's decode,
        # runs in a read-only Sandbox of its own (`image_decoder`), which keeps none.
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

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """The environment a confined command sees: without the model credentials the
        agent itself reads (a command the model wrote could otherwise send them anywhere
        while the network is on) and without the addresses of the user's agents."""
        carrying = set(credential_values(env))
        return {
            name: value
            for name, value in env.items()
            if not self._hides_variable(name) and name not in carrying
        }

    def terminal_environment(self) -> dict[str, str]:
        """What a command in an editor's terminal gets: a local command's environment, with
        the terminal described as the one it runs in. The agent's own `TERM` describes its
        pipes (often unset, or `dumb`, under a GUI editor); every editor terminal that runs
        our commands (Zed's, VS Code's xterm.js, JetBrains') is an xterm-256color, and
        without `TERM` pagers, `git log` and colours degrade."""
        return {**self.environment(dict(os.environ)), "TERM": "xterm-256color"}

    def _hides_variable(self, name: str) -> bool:
        # By the name and this sandbox's settings alone: kept (every variable, every launch).
        hides = self._hidden_names.get(name)
        if hides is None:
            if len(self._hidden_names) > 4096:
                self._hidden_names.clear()
            hides = self._hidden_names[name] = hides_variable(
                name, hidden_env=self.hidden_env, ssh_agent=self.ssh_agent
            )
        return hides

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

    @property
    def temp_dir(self) -> Path:
        """TMPDIR inside the sandbox: where each command gets a fresh size-capped tmpfs of
        its own (nothing written there reaches the disk, and no other command's or
        session's temp files are visible). On the host it is only an empty mount point,
        one per agent process (`os._exit` at the end leaves one, not one per session)."""
        return _mount_point()

    # -- the launch ------------------------------------------------------------------

    def wrap(
        self,
        argv: list[str],
        *,
        cwd: Path,
        new_session: bool = False,
        in_cgroup: bool = False,
        command: str | None = None,
        search_path: str | None = None,
        alive_held: bool = False,
        own_fds: list[str] | None = None,
    ) -> list[str]:
        """`argv` as a confined launch (launcher and bwrap first). Call only when
        `confinement == "sandboxed"`. `in_cgroup`: the caller starts it from the
        `launch_thread()`, which is inside the session's pids cgroup: no launcher moves it in.
        `command`: the bash command line `argv` runs, with its PATH (`search_path`): only the
        caches its programs write get an overlay (`cache_needs`); None, all of them.
        `alive_held`: the caller holds the alive lock shared for the launch's life itself.
        `own_fds`: bwrap options naming descriptors the caller passes bwrap itself, to watch
        the sandbox's pid 1 (`pid_one.PidOne`) and with the seccomp filter
        (`seccomp.SeccompFd`); None (an editor's terminal): the command line's shell is pid 1,
        so bwrap exits only once everything in the sandbox is gone, and a `sh` before bwrap
        opens the filter's file."""
        head, argv = self.launch_head(argv, in_cgroup=in_cgroup, alive_held=alive_held, own_fds=own_fds)
        try:
            options = self.launch_options(
                cwd=cwd, new_session=new_session, command=command, search_path=search_path
            )
        except BaseException:
            self.after_command()  # counted by `launch_head`; it will never run
            raise
        return [*head, *options, "--", *argv]

    def launch_head(
        self,
        argv: list[str],
        *,
        in_cgroup: bool = False,
        alive_held: bool = False,
        own_fds: list[str] | None = None,
    ) -> tuple[list[str], list[str]]:
        """The launch's start, up to and with bwrap's own options (`wrap`), and the command
        as it runs inside: what needs no look at the file system. Once it returns, the
        launch counts as running until `after_command`, which the caller calls exactly once:
        when the command has ended, or when it will never start; `launch_options` must
        follow."""
        assert self.bwrap is not None
        self._running += 1
        try:
            return self._head(argv, in_cgroup=in_cgroup, alive_held=alive_held, own_fds=own_fds)
        except BaseException:
            self.after_command()
            raise

    def _head(
        self, argv: list[str], *, in_cgroup: bool, alive_held: bool, own_fds: list[str] | None
    ) -> tuple[list[str], list[str]]:
        assert self.bwrap is not None
        self._watch_plants()
        cgroup, memory = self._pids_cgroup(), self._memory_cgroup()
        groups = [g.path / "cgroup.procs" for g in (cgroup, memory) if g is not None]
        prefix = limits.move_in(groups) if not in_cgroup else []
        # Held for the sandbox's whole life, outside it: a stored "always" outside the
        # sandbox is not applied meanwhile (`alive_lock`).
        held = self.alive.launch_prefix() if self.alive is not None and not alive_held else []
        opener: list[str] = []
        editor = own_fds is None
        if own_fds is None:
            argv = keep_shell(argv)
            opener, filtered = seccomp.editor_prefix()
            own_fds = [*AS_PID_1, *filtered]
        inside = limits.limited(argv, self.max_processes)
        if editor and self.network:
            # An editor's terminal: the editor starts it, not our launch thread, so the
            # host's abstract sockets (X11, a session bus) are scoped from inside.
            from hermes_core.sandbox.abstract_sockets import scoped_exec

            inside = scoped_exec(inside, self.bwrap, sys.executable)
        # bwrap's own options go anywhere before `--`: right after the program.
        return [*prefix, *held, *opener, self.bwrap, *own_fds], inside

    def launch_options(
        self,
        *,
        cwd: Path,
        new_session: bool = False,
        command: str | None = None,
        search_path: str | None = None,
    ) -> list[str]:
        """bwrap's options for the next launch (mounts, environment, directory), from the
        file system as it is now; `command`, `search_path` as in `wrap`."""
        assert self.bwrap is not None
        need: CacheNeed = ALL
        if command is not None and self.mode == "workspace-write" and self.state is not None:
            need = cache_need(
                command,
                cwd=cwd,
                home=self.home,
                search_path=search_path,
                workspace=[*self.scope.roots, *self._existing(self.writable)],
            )
        mounts = self.mounts(need)
        if self.mode == "workspace-write":
            # Each writable cache overlay gets a work dir of its own, given back once the
            # session's commands have ended (`after_command`: a local command's end, an
            # editor terminal's exit or release, a hook's): two launches sharing one, the
            # second one's mount took the first one's away (its cache writes failed, EPERM).
            mounts.overlays = [self._own_work_dir(layer) for layer in mounts.overlays]
        launch = launch_argv(
            self.bwrap,
            mounts,
            argv=[],
            cwd=cwd,
            tmp=self.temp_dir,
            tmp_bytes=self.tmp_mb * 1024 * 1024,
            network=self.network,
            new_session=new_session,
            # An editor's terminal (the only launch in a new session) gets the environment a
            # local command gets, not the editor's less the names the agent knows.
            environment=self.terminal_environment() if new_session else None,
            unset=[
                *CREDENTIAL_NAMES,
                *sorted(self.hidden_env),
                *self._hidden_agent_env(),
                # An editor's terminal inherits the editor's environment, which is the
                # agent's too when the editor started it: its credentials by name.
                *secret_variables(os.environ),
                *credential_values(os.environ),
            ],
        )
        assert launch[-1] == "--"
        return launch[1:-1]

    def _own_work_dir(self, layer: caches.Overlay) -> caches.Overlay:
        layer, work = WORK_DIRS.take(layer)
        if work is not None:
            self._work_dirs.append(work)
        return layer

    def _hidden_agent_env(self) -> list[str]:
        if self._agent_env is None:  # fixed names and settings: worked out once
            self._agent_env = [name for name in (*AGENT_ENV, *SOCKET_ENV) if self._hides_variable(name)]
        return self._agent_env

    def launch_thread(self) -> limits.LaunchThread:
        """The thread this session's local commands are started from (inside its pids
        cgroup where there is one)."""
        with self._making:
            if self._thread is None:
                memory = self._memory_cgroup()
                self._thread = limits.LaunchThread(
                    self._pids_cgroup(), self.bwrap, memory.path if memory is not None else None
                )
                weakref.finalize(self, self._thread.close)
            return self._thread

    def read_only_view(self) -> Sandbox:
        """This sandbox with the roots read-only, sharing its pids cgroup and launch state:
        for a launch that cannot ask where the sandbox cannot pin a root's protected names
        (a hook, `core/policy/hooks.py`)."""
        self._pids_cgroup()  # made once, here, so that the view shares it
        view = copy.copy(self)
        view.mode = "read-only"
        return view

    def _pids_cgroup(self) -> limits.PidsCgroup | None:
        with self._making:
            if self._cgroup is False:
                self._cgroup = limits.PidsCgroup.create(
                    f"hermes-acp-{os.getpid()}-{next(_counter)}", self.max_processes
                )
            return self._cgroup

    def _memory_cgroup(self) -> MemoryCgroup | None:
        with self._making:
            if self._memory is False:
                made = None
                if self.memory_mb is not None:
                    made = MemoryCgroup.create(
                        f"hermes-acp-{os.getpid()}-{next(_counter)}", cap_bytes(self.memory_mb)
                    )
                self._memory = made  # not None before it is made: a launch meanwhile would go uncapped
            return self._memory

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
            # points go (a mount point in use elsewhere would lose its mount).
            for path in sorted(self._placeholders, reverse=True):
                rmdir_quietly(str(path))
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
        if not self.edit_guarded:
            return
        if self._edit_before is None:
            for folder in edit_guard.make_missing_folders(self.edit_guarded, self.scope.roots):
                self._remove_when_done(folder, per_command=False)
            self._edit_before = edit_guard.identities(self.edit_guarded)
        else:
            self._undo_edits()

    def _undo_edits(self) -> None:
        assert self._edit_before is not None
        for sentence in edit_guard.undo(self.edit_guarded, self._edit_before):
            logger.warning("sandbox: %s", sentence)
            self._undone.append(sentence)

    def _undo_plants(self) -> None:
        assert self._watch is not None
        for sentence in planted.undo(self._watch, self.scope.roots):
            logger.warning("sandbox: %s", sentence)
            self._undone.append(sentence)

    def accept_written(self, path: Path) -> None:
        """The file tools wrote `path`: while a command runs, it is no command's plant."""
        if self._watch is not None:
            planted.accept(self._watch, path, self.scope.roots)
        if self._edit_before is not None:
            edit_guard.accept(self._edit_before, path)

    def take_undone(self) -> list[str]:
        """What was undone after this session's commands since last asked (for the model)."""
        undone, self._undone = self._undone, []
        return undone

    # -- after the fact --------------------------------------------------------------

    def explain_refusal(self, output: str) -> str | None:
        """Why the sandbox, not the command, is likely to blame for a failure, or None."""
        if isinstance(self._memory, MemoryCgroup) and self._memory.killed_since_last_look():
            return self._memory.why()
        guarded = edit_guard.explain(output, self.edit_guarded, self.scope.roots)
        if guarded is not None:
            return guarded
        return explain_refusal(output, mounts=self.mounts, temp_dir=self.temp_dir, network=self.network)


@functools.cache
def _mount_point() -> Path:
    path = Path(tempfile.mkdtemp(prefix="hermes-acp-tmp-")).resolve()
    atexit.register(rmdir_quietly, str(path))
    return path


def check_line(settings: Settings) -> tuple[bool | None, str, str]:
    """--check's line about the sandbox: (ok; None when turned off), label, detail."""
    from hermes_core.fence.scope import WorkspaceScope

    sandbox = Sandbox.from_settings(settings, WorkspaceScope(Path.cwd()))
    ok = {"sandboxed": True, "off": None, "unavailable": False}[sandbox.confinement]
    return ok, "sandbox", sandbox.describe()
