"""Limits on what one sandboxed command may take from the machine: a process count (so a
fork bomb fails inside the sandbox instead of filling the process table) and a size-capped
TMPDIR (a tmpfs with `--size`, so a disk fill there ends in ENOSPC).

The process count is enforced twice where the machine allows it: RLIMIT_NPROC set inside
the sandbox by `prlimit` (the kernel counts a user namespace's processes on their own, so
the user's other processes do not count; root ignores it), and a `pids` cgroup, when a
writable cgroup v1 `pids` hierarchy exists (root on hosts and in many containers). A local
command starts inside that cgroup from birth: it is forked by a thread of the session that
joined the cgroup once (`LaunchThread`): moving a process between cgroups costs (11.6 ms
at load 3, `bench_sandbox --breakdown`), a fork from a thread already inside needs no
move. An editor's terminal, which the editor starts, is moved in by a `sh` before bwrap.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import queue
import shutil
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

PIDS_V1 = Path("/sys/fs/cgroup/pids")


@functools.cache
def prlimit() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


def limited(argv: list[str], max_processes: int) -> list[str]:
    """`argv`, run inside the sandbox, with its processes capped (threads count too). A
    `bash -c` command line gets bash's own `ulimit` first (no extra program to start: the
    cap costs nothing); anything else starts under `prlimit`. `ulimit` sets the soft and the
    hard limit, and raising a hard limit needs a capability the sandbox does not have."""
    if len(argv) >= 3 and Path(argv[0]).name in ("bash", "zsh") and argv[1] == "-c":
        return [argv[0], "-c", f"ulimit -u {int(max_processes)} || exit 126; {argv[2]}", *argv[3:]]
    tool = prlimit()
    if tool is None:
        return argv
    return [tool, f"--nproc={max_processes}:{max_processes}", "--", *argv]


class PidsCgroup:
    """A `pids` cgroup for one session's commands, removed with it (when empty)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        weakref.finalize(self, _remove, str(path))

    @classmethod
    def create(cls, name: str, max_processes: int) -> PidsCgroup | None:
        base = _own_pids_cgroup()
        if base is None:
            return None
        _sweep(base)
        path = base / name
        try:
            path.mkdir(exist_ok=True)
            # One more than the cap: the session's `LaunchThread` is a task of the cgroup too.
            (path / "pids.max").write_text(f"{max_processes + 1}\n")
        except OSError:
            return None
        return cls(path)

    def launcher(self) -> list[str]:
        """The argv prefix, run before bwrap, that moves the command into the cgroup.
        The sandbox sees /sys read-only and cannot move itself out."""
        procs = str(self.path / "cgroup.procs")
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs]


class LaunchThread:
    """The thread one session's local commands are started from: forking there keeps the
    fork and exec off the event loop and, when the session has a `pids` cgroup, the thread
    joins it once so what it forks starts inside, no command paying for a move. Only
    `subprocess.Popen` calls run on it. On `close` it leaves the cgroup and removes it
    (when empty)."""

    def __init__(
        self, cgroup: PidsCgroup | None, bwrap: str | None = None, memory: Path | None = None
    ) -> None:
        self._cgroup = cgroup
        self._bwrap = bwrap  # what it starts: the thread scopes abstract sockets for it
        self.abstract_sockets_scoped = False
        self._memory = memory  # the session's memory cgroup (`memory_cap`), joined too
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], Future[object]] | None] = (
            queue.SimpleQueue()
        )
        # Whether the thread joined the cgroup (False: none here, or it could not join, and a
        # launch must move itself in).
        self.in_cgroup: Future[bool] = Future()
        self._tid: int | None = None  # the thread's id, once it runs
        name = f"sandbox-{cgroup.path.name}" if cgroup is not None else "sandbox-launch"
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, job: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((job, future))  # type: ignore[arg-type]
        return future

    def close(self) -> None:
        """Leave the cgroups and remove them now, from the caller's thread: at the agent's
        exit (`os._exit` after the exit handlers) this thread would never run again to do
        it, and every server left its empty cgroups behind. Then let the thread end."""
        tid = self._tid
        if tid is not None and self.in_cgroup.done() and self.in_cgroup.result():
            for group in (self._cgroup.path if self._cgroup is not None else None, self._memory):
                if group is not None:
                    with contextlib.suppress(OSError):  # v1 `tasks` moves one thread, any thread
                        (group.parent / "tasks").write_text(f"{tid}\n")
                    _remove(str(group))
        self._jobs.put(None)

    def _serve(self) -> None:
        from hermes_core.sandbox.abstract_sockets import scope_this_thread

        # Before anything is forked here: every sandboxed command starts inside the domain.
        self.abstract_sockets_scoped = scope_this_thread(self._bwrap)
        self._tid = threading.get_native_id()
        self.in_cgroup.set_result(self._join())
        while (item := self._jobs.get()) is not None:
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:  # handed to the caller, who raises it
                future.set_exception(exc)
        if self._cgroup is not None and self.in_cgroup.result():
            with contextlib.suppress(OSError):  # back where the agent is, so the cgroup can go
                (self._cgroup.path.parent / "tasks").write_text(f"{threading.get_native_id()}\n")
            _remove(str(self._cgroup.path))
        if self._memory is not None:
            with contextlib.suppress(OSError):
                (self._memory.parent / "tasks").write_text(f"{threading.get_native_id()}\n")
            _remove(str(self._memory))

    def _join(self) -> bool:
        if self._memory is not None:
            try:
                (self._memory / "tasks").write_text(f"{threading.get_native_id()}\n")
            except OSError as exc:
                logger.info("could not join %s (%s): each command moves itself in", self._memory, exc)
                return False
        if self._cgroup is None:
            return self._memory is not None
        tasks = self._cgroup.path / "tasks"
        try:
            # cgroup v1 `tasks` takes one thread (`cgroup.procs` would move the whole agent).
            tasks.write_text(f"{threading.get_native_id()}\n")
        except OSError as exc:
            logger.info("could not join %s (%s): each command moves itself in", tasks, exc)
            return False
        return True


def _own_pids_cgroup() -> Path | None:
    return own_v1_cgroup(PIDS_V1, "pids")


def own_v1_cgroup(hierarchy: Path, controller: str) -> Path | None:
    """This process's cgroup in a v1 hierarchy, when it may make cgroups there."""
    if not (hierarchy / "cgroup.procs").exists():
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, relative = line.split(":", 2)
        if controller in controllers.split(","):
            path = hierarchy / relative.lstrip("/")
            return path if os.access(path, os.W_OK) else None
    return None


def move_in(procs: list[Path]) -> list[str]:
    """The argv prefix, run before bwrap, that moves the command into each cgroup
    (`cgroup.procs` files). The sandbox sees /sys read-only and cannot move itself out."""
    if not procs:
        return []
    moves = " && ".join(f'echo $$ > "${index}"' for index in range(len(procs)))
    shift = f" && shift {len(procs) - 1}" if len(procs) > 1 else ""
    return ["/bin/sh", "-c", f'{moves}{shift} && exec "$@"', *map(str, procs)]


def _sweep(base: Path) -> None:
    """Remove the empty cgroups of agents that are gone: the server ends with `os._exit`,
    so a finalizer does not always run."""
    try:
        names = [e.name for e in os.scandir(base) if e.is_dir() and e.name.startswith("hermes-acp-")]
    except OSError:
        return
    for name in names:
        owner = name.split("-")[2]
        if owner.isdigit() and not pid_alive(int(owner)):
            _remove(str(base / name))


def pid_alive(pid: int) -> bool:
    """Some process has `pid` (ours or another user's: EPERM says it exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):  # still holds a process, or already gone
        os.rmdir(path)
