"""A session's sandboxed launch: the argv that confines a command (the launcher, bwrap and
its options, `wrap`), the environment the command sees, and the pids and memory cgroups
and launch thread its commands start in. What it mounts is fence_mounts.py's; what lives
while commands run, launch_state.py's.
"""

from __future__ import annotations

import atexit
import copy
import functools
import itertools
import os
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Literal, Self

from hermes_core.sandbox import limits, seccomp
from hermes_core.sandbox.alive_lock import AliveLock
from hermes_core.sandbox.bwrap_args import launch_argv
from hermes_core.sandbox.cache_needs import ALL, CacheNeed, cache_need
from hermes_core.sandbox.hidden_env import (
    AGENT_ENV,
    CREDENTIAL_NAMES,
    SOCKET_ENV,
    credential_values,
    hides_variable,
    secret_variables,
)
from hermes_core.sandbox.launch_state import LaunchState
from hermes_core.sandbox.memory_cap import MemoryCgroup, cap_bytes
from hermes_core.sandbox.mount_points import rmdir_quietly
from hermes_core.sandbox.pid_one import AS_PID_1, keep_shell

_counter = itertools.count(1)


class Launches(LaunchState):
    """How a `Sandbox` (bwrap.py) launches a command."""

    alive: AliveLock | None
    network: bool
    hidden_env: frozenset[str]
    max_processes: int
    tmp_mb: int
    memory_mb: int | None
    _memory: MemoryCgroup | Literal[False] | None  # False: not made yet
    _cgroup: limits.PidsCgroup | Literal[False] | None  # False: not looked for yet
    _thread: limits.LaunchThread | None
    _making: threading.RLock
    _agent_env: list[str] | None
    _hidden_names: dict[str, bool]

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

    def _hidden_agent_env(self) -> list[str]:
        if self._agent_env is None:  # fixed names and settings: worked out once
            self._agent_env = [name for name in (*AGENT_ENV, *SOCKET_ENV) if self._hides_variable(name)]
        return self._agent_env

    # -- where its commands start ------------------------------------------------------

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

    def read_only_view(self) -> Self:
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


@functools.cache
def _mount_point() -> Path:
    path = Path(tempfile.mkdtemp(prefix="hermes-acp-tmp-")).resolve()
    atexit.register(rmdir_quietly, str(path))
    return path
