"""Whether a sandboxed command started by hermes-acp may still be running.

A stored "always" outside the sandbox covers a command while the names it checks are plain
workspace files and the scripts it runs have the approved content. That is checked, then
the command runs unconfined: a sandboxed job still running (a background command, a daemon
one left behind, a command of another session or another hermes-acp process) could swap a
checked name for a link to `~/.ssh/id_ed25519`, or rewrite a bound script, in between.

So every sandboxed launch holds a shared `flock` on one lock file under the agent's home for
as long as its sandbox lives: a local launch on a descriptor of the agent's own, released
once bwrap has exited and its pid 1 is gone (`pid_one`: nothing the command left running is
alive then); a launch the editor's terminal runs through
`setpriv --pdeathsig KILL flock --shared --close LOCK bwrap …`.
Either way it is held outside the sandbox and never inherited by bwrap, so nothing inside
holds, sees or can drop it (the agent's home is hidden from the sandbox, so the file cannot
be unlinked or replaced from there either); `setpriv` kills `flock` (and so bwrap) when its
parent dies, as bwrap alone did before; there bwrap runs with `--as-pid-1`, so it exits
only once everything in its pid namespace is gone. Not covered: an editor that kills
`flock` itself (a cancel in the editor's terminal) drops the lock while the kernel is
still killing what the sandbox held (README "Back doors").

A stored "always" outside the sandbox takes the exclusive lock without waiting, checks
under it and holds it while the command runs: while any sandboxed command lives it cannot
take it (the user is asked), and a sandboxed launch meanwhile waits for the command to end.
Without `flock` or `setpriv` nothing is tracked, and no "always" outside the sandbox applies.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

# Only absolute, system places: what runs before bwrap runs outside the sandbox.
_SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"

RUNNING = "a sandboxed command is still running and could change what this runs"
UNTRACKED = (
    "flock or setpriv (util-linux) is missing, so a sandboxed command still running cannot be ruled out"
)


class Hold:
    """The exclusive lock, held for one unconfined command; `release()` once it ended."""

    __slots__ = ("_lock",)

    def __init__(self, lock: AliveLock) -> None:
        self._lock: AliveLock | None = lock

    def release(self) -> None:
        if self._lock is not None:
            self._lock._release()
            self._lock = None


class SharedHold:
    """The shared lock, held by the agent itself for one local launch (no `flock` process to
    start): taken before the launch, `release()`d once bwrap has exited."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class AliveLock:
    """The lock file every sandboxed launch of one agent home holds shared."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None  # held exclusive while `_holders` > 0
        self._holders = 0
        self._made = False
        flock = shutil.which("flock", path=_SYSTEM_PATH)
        setpriv = shutil.which("setpriv", path=_SYSTEM_PATH)
        self._prefix = (
            [setpriv, "--pdeathsig", "KILL", flock, "--shared", "--close", str(path)]
            if flock and setpriv
            else []
        )

    @property
    def tracked(self) -> bool:
        return bool(self._prefix)

    def launch_prefix(self) -> list[str]:
        """What runs a sandboxed launch holding the shared lock ([] when untracked)."""
        if self._prefix and not self._made:
            # flock(1) would create it with the umask's mode, and not its folder.
            os.close(self._create())
            self._made = True
        return list(self._prefix)

    def hold_shared(self) -> SharedHold:
        """The shared lock on a descriptor of its own (not inherited: close-on-exec), for a
        launch this process starts and watches; waits while an unconfined command holds
        the lock exclusive. Call off the event loop."""
        fd = self._create()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except BaseException:
            os.close(fd)
            raise
        return SharedHold(fd)

    def try_exclusive(self) -> Hold | str:
        """The exclusive lock when no sandboxed command holds the shared one, else why not.
        Never waits. Unconfined commands of this process share one hold."""
        if not self._prefix:
            return UNTRACKED
        if self._holders == 0:
            try:
                fd = self._open()
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._close()
                return RUNNING
            except OSError as exc:
                self._close()
                return f"{RUNNING} (its lock cannot be read: {exc.strerror})"
        self._holders += 1
        return Hold(self)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = self._create()
        return self._fd

    def _create(self) -> int:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _release(self) -> None:
        self._holders -= 1
        if self._holders == 0:
            self._close()  # drops the lock with the descriptor


_LOCKS: dict[Path, AliveLock] = {}
# The shared holds of the local launches running, by their process (not its pid: a pid is
# reused once reaped).
_LAUNCHES: dict[object, SharedHold] = {}


def keep_until_exit(process: object, held: SharedHold) -> None:
    _LAUNCHES[process] = held


def release_for(process: object) -> None:
    """Once `process` (bwrap) has exited: its launch's shared hold goes."""
    held = _LAUNCHES.pop(process, None)
    if held is not None:
        held.release()


def alive_lock(home: Path) -> AliveLock:
    """The lock of the agent home `home`, one object per process (its holds are counted)."""
    path = home / "sandbox" / "alive.lock"
    if path not in _LOCKS:
        _LOCKS[path] = AliveLock(path)
    return _LOCKS[path]
