"""File tools: read_file, write_file, list_files (patch: core/tools/patch.py)."""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from hermes_core.events import FileDiff, ToolKind
from hermes_core.prompt.images import looks_like_image
from hermes_core.tools.base import CannotRun, Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import BinaryFile, FileTooLarge, Workspace, WorkspaceError

EDITS = "edits"  # the approval scope of every file edit
_MAX_LISTED_FILES = 1_000


def text_lines(text: str) -> list[str]:
    """Lines as editors and rg number them: split on \\n only, \\r of CRLF dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def path_failure(exc: BaseException, path: str) -> ToolResult:
    """The message the model reads when a path cannot be used."""
    if isinstance(exc, FileNotFoundError):
        return ToolResult.error(f"File not found: {path}")
    if isinstance(exc, IsADirectoryError):
        return ToolResult.error(f"{path} is a directory; use list_files to see what it contains.")
    if isinstance(exc, PermissionError):
        return ToolResult.error(f"Permission denied: {path}")
    if isinstance(exc, NotADirectoryError):
        return ToolResult.error(f"A parent of {path} is a file, not a directory.")
    if isinstance(exc, WorkspaceError):
        return ToolResult.error(str(exc))
    return ToolResult.error(f"{path}: {exc}")


def unified_diff(old: str, new: str, label: str, limit: int) -> str:
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{label}", f"b/{label}", n=3
        )
    )
    if len(diff) > limit:
        diff = diff[:limit] + f"\n[diff cut at {limit} characters]"
    return diff


def _change_counts(old: str, new: str) -> tuple[int, int]:
    added = removed = 0
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm=""):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


# --- read_file ------------------------------------------------------------------------


class ReadFileArgs(ToolArgs):
    path: str = Field(description="The file to read, relative to the workspace root or absolute.")
    offset: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read.")


class ReadFileTool(Tool[ReadFileArgs]):
    """Read a text file, with line numbers (`     1\\t...`). Reads up to 2000 lines by default; for
    large files use search first, then read the relevant part with offset and limit. Line numbers
    are for reference only; they are not part of the file. Files holding credentials (.env files,
    ~/.ssh, ~/.aws...) are refused."""

    name = "read_file"
    kind: ToolKind = "read"

    def title(self, args: ReadFileArgs, workspace: Workspace) -> str:
        if args.offset and args.limit:
            span = f" (lines {args.offset}-{args.offset + args.limit - 1})"
        elif args.limit:
            span = f" (lines 1-{args.limit})"
        elif args.offset:
            span = f" (from line {args.offset})"
        else:
            span = ""
        return f"Read {args.path}{span}"

    def paths(self, args: ReadFileArgs) -> list[str]:
        return [args.path]

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        try:
            if looks_like_image(args.path) and (image := await _image_result(args.path, ctx)):
                return image
            # The workspace opens it beneath its roots and checks what it opened.
            text = await ctx.workspace.read_text(args.path, allow_outside=ctx.allow_outside)
        except (OSError, WorkspaceError) as exc:
            return path_failure(exc, args.path)
        text = _without_git_credentials(args.path, text, ctx)
        lines = text_lines(text)
        if not lines:
            return ToolResult(f"{args.path} is empty.", raw_output={"lines": 0})
        start = args.offset or 1
        if start > len(lines):
            return ToolResult.error(
                f"offset {start} is past the end of {args.path}, which has {len(lines)} lines."
            )
        limit = args.limit or ctx.limits.default_read_lines
        max_chars = ctx.limits.max_line_chars
        out: list[str] = []
        used = 0
        last = start - 1
        for number in range(start, min(len(lines), start + limit - 1) + 1):
            line = lines[number - 1]
            if len(line) > max_chars:
                line = line[:max_chars] + f" [… line cut, {len(line) - max_chars} more characters]"
            rendered = f"{number:>6}\t{line}"
            if out and used + len(rendered) + 1 > ctx.limits.max_output_chars:
                break
            out.append(rendered)
            used += len(rendered) + 1
            last = number
        body = "\n".join(out)
        if last < len(lines):
            body += f"\n\n[Showing lines {start}-{last} of {len(lines)}. Use offset={last + 1} to read more.]"
        return ToolResult(body, raw_output={"lines": len(lines), "first": start, "last": last})


def _without_git_credentials(path: str, text: str, ctx: ToolContext) -> str:
    """A git config as the sandbox shows it: a token in a remote URL is a secret too."""
    from hermes_core.sandbox.git_credentials import shown

    return shown(text, path, ctx.workspace.scope.absolute(path))


async def _image_result(shown: str, ctx: ToolContext) -> ToolResult | None:
    """An image file: the model gets the image itself (when it takes images), after the
    results. None when its bytes are no image: it is read as any other file. The bytes come
    through the workspace, as any file's do (beneath a root, regular, not a FIFO)."""
    from hermes_core.prompt.image_decoder import downscale
    from hermes_core.prompt.images import MAX_FILE_BYTES, ImageError, NotAnImage, load_image

    data = await ctx.workspace.read_bytes(shown, MAX_FILE_BYTES, allow_outside=ctx.allow_outside)
    sandbox = ctx.workspace.sandbox
    try:
        loaded = await asyncio.to_thread(load_image, shown, data, lambda d, m: downscale(d, m, sandbox))
    except NotAnImage:
        return None
    except ImageError as exc:
        return ToolResult.error(f"{shown} could not be read as an image: {exc}")
    text = f"{loaded.describe(shown)}. The image follows the tool results."
    return ToolResult(text, raw_output={"image": loaded.part.mime_type}, images=[loaded.part])


# --- write_file -----------------------------------------------------------------------


class PathArgs(ToolArgs):
    path: str


EditArgs = TypeVar("EditArgs", bound=PathArgs)


class FileEditTool(Tool[EditArgs]):
    """A tool that changes one file, `args.path`; asked about like every edit."""

    kind: ToolKind = "edit"
    needs_approval = True
    read_only = False
    approval_group = EDITS
    verb: str  # what its card says it does to the file

    def title(self, args: EditArgs, workspace: Workspace) -> str:
        return f"{self.verb} {args.path}"

    def paths(self, args: EditArgs) -> list[str]:
        return [args.path]

    async def change(
        self, args: EditArgs, workspace: Workspace, allow_outside: bool
    ) -> tuple[Path, str | None, str]:
        """(the file's absolute path, its text now or None when it is new, its text after). Raises
        CannotRun when the edit cannot apply, OSError or WorkspaceError when the path
        cannot be used."""
        raise NotImplementedError

    async def preview(
        self, args: EditArgs, workspace: Workspace, *, allow_outside: bool = False
    ) -> FileDiff | None:
        try:
            path, old, new = await self.change(args, workspace, allow_outside)
        except (OSError, WorkspaceError):
            return None  # the run says what is wrong with the path
        return FileDiff(str(path), old, new)


class WriteFileArgs(PathArgs):
    path: str = Field(description="The file to create or overwrite; missing parent directories are created.")
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(FileEditTool[WriteFileArgs]):
    """Create a file, or replace a file's whole content. For changing part of an existing file use
    patch instead: it is shorter and cannot lose the rest of the file."""

    verb = "Write"
    name = "write_file"

    async def change(
        self, args: WriteFileArgs, workspace: Workspace, allow_outside: bool
    ) -> tuple[Path, str | None, str]:
        # The name for the card; the workspace opens the file (and refuses one outside).
        resolved = workspace.scope.absolute(args.path)
        try:
            return resolved, await workspace.read_text(args.path, allow_outside=allow_outside), args.content
        except FileNotFoundError:
            return resolved, None, args.content
        except (BinaryFile, FileTooLarge) as exc:
            raise CannotRun(f"Not overwriting: {exc}") from None

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        try:
            resolved, old, _ = await self.change(args, ctx.workspace, ctx.allow_outside)
            if old == args.content:
                return ToolResult(f"{args.path} already has exactly this content; nothing changed.")
            await ctx.workspace.write_text(args.path, args.content, allow_outside=ctx.allow_outside)
        except CannotRun as exc:
            return ToolResult.error(str(exc))
        except (OSError, WorkspaceError) as exc:
            return path_failure(exc, args.path)
        diff = FileDiff(str(resolved), old, args.content)
        line_count = len(text_lines(args.content))
        if old is None:
            return ToolResult(f"Created {args.path} ({line_count} lines).", diff=diff)
        added, removed = _change_counts(old, args.content)
        text = f"Overwrote {args.path} ({line_count} lines; +{added} -{removed}).\n" + unified_diff(
            old, args.content, args.path, ctx.limits.max_output_chars
        )
        return ToolResult(text, diff=diff)


# --- list_files -----------------------------------------------------------------------


class ListFilesArgs(ToolArgs):
    path: str = Field(
        default=".", description="The directory to list, recursively; defaults to the workspace root."
    )
    glob: str | None = Field(
        default=None, description="Only list files matching this glob, e.g. `*.py` or `src/**/test_*.ts`."
    )


class ListFilesTool(Tool[ListFilesArgs]):
    """List the files under a directory, recursively, as paths relative to it, sorted. Respects
    .gitignore and skips .git. Use glob to narrow it down; use search to look inside files."""

    name = "list_files"
    kind: ToolKind = "search"

    def title(self, args: ListFilesArgs, workspace: Workspace) -> str:
        only = f" ({args.glob})" if args.glob else ""
        return f"List {args.path or '.'}{only}"

    def paths(self, args: ListFilesArgs) -> list[str]:
        return [args.path or "."]

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
        path = args.path or "."
        try:
            listing = await ctx.workspace.list_files(path, glob=args.glob, allow_outside=ctx.allow_outside)
        except FileNotFoundError:
            return ToolResult.error(f"Directory not found: {path}")
        except (OSError, WorkspaceError) as exc:
            return ToolResult.error(str(exc))
        names = _unguarded(listing.names, path, ctx)
        if listing.returncode == 2 and not listing.names:
            return ToolResult.error(listing.stderr or "ripgrep failed to list the files")
        only = f" matching {args.glob}" if args.glob else ""
        if not names:
            return ToolResult(f"No files{only} in {path}.", raw_output={"files": 0})
        return ToolResult(_render_listing(names, ctx, only), raw_output={"files": len(names)})


def _unguarded(names: list[str], folder: str, ctx: ToolContext) -> list[str]:
    """The names outside the files a deny or ask `Read(…)` rule guards (the call named the
    folder, which no rule may name), left out without a word: a count of them answers
    whether a guarded name fits the glob asked."""
    if ctx.read_guard is None:
        return names
    scope = ctx.workspace.scope
    base = folder.rstrip("/") or "/"
    return [name for name in names if ctx.read_guard(str(scope.absolute(f"{base}/{name}"))) is None]


def _render_listing(names: list[str], ctx: ToolContext, only: str) -> str:
    shown: list[str] = []
    used = 0
    for name in names[:_MAX_LISTED_FILES]:
        if used + len(name) + 1 > ctx.limits.max_output_chars:
            break
        shown.append(name)
        used += len(name) + 1
    text = "\n".join(shown)
    if len(shown) < len(names):
        text += (
            f"\n[{len(names) - len(shown)} more files not shown ({len(names)} in all){only}; "
            "narrow it with a subdirectory path or a glob.]"
        )
    return text
