"""File tools: read_file, write_file, patch, list_files."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from pydantic import BaseModel, Field

from core.events import FileDiff, ToolKind
from core.tools.base import CannotRun, Tool, ToolContext, ToolResult
from core.tools.search import GIT_DIR_EXCLUDED, run_rg, strip_dot_slash
from core.workspace import BinaryFile, FileTooLarge, Workspace, WorkspaceError

EDITS = "edits"  # the approval scope of every file edit
_MAX_LISTED_FILES = 1_000
_MAX_MATCH_LINES_SHOWN = 20


def _lines(text: str) -> list[str]:
    """Lines as editors and rg number them: split on \\n only, \\r of CRLF dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _failure(exc: BaseException, path: str) -> ToolResult:
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


def _unified_diff(old: str, new: str, label: str, limit: int) -> str:
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


class ReadFileArgs(BaseModel):
    path: str = Field(description="The file to read, relative to the workspace root or absolute.")
    offset: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read.")


class ReadFileTool(Tool[ReadFileArgs]):
    name = "read_file"
    description = (
        "Read a text file, with line numbers (`     1\\t...`). Reads up to 2000 lines by default; "
        "for large files use search first, then read the relevant part with offset and limit. "
        "Line numbers are for reference only; they are not part of the file."
    )
    args_model = ReadFileArgs
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
            resolved = ctx.workspace.scope.resolve(args.path, allow_outside=ctx.allow_outside)
            if resolved.is_dir():
                raise IsADirectoryError(args.path)
            text = await ctx.workspace.read_text(resolved)
        except (OSError, WorkspaceError) as exc:
            return _failure(exc, args.path)
        lines = _lines(text)
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


# --- write_file -----------------------------------------------------------------------


class WriteFileArgs(BaseModel):
    path: str = Field(description="The file to create or overwrite; missing parent directories are created.")
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(Tool[WriteFileArgs]):
    name = "write_file"
    description = (
        "Create a file, or replace a file's whole content. For changing part of an existing file "
        "use patch instead: it is shorter and cannot lose the rest of the file."
    )
    args_model = WriteFileArgs
    kind: ToolKind = "edit"
    needs_approval = True
    read_only = False
    approval_group = EDITS

    def title(self, args: WriteFileArgs, workspace: Workspace) -> str:
        return f"Write {args.path}"

    def paths(self, args: WriteFileArgs) -> list[str]:
        return [args.path]

    async def preview(
        self, args: WriteFileArgs, workspace: Workspace, *, allow_outside: bool = False
    ) -> FileDiff | None:
        try:
            resolved = workspace.scope.resolve(args.path, allow_outside=allow_outside)
            old: str | None = await workspace.read_text(resolved)
        except FileNotFoundError:
            old = None
        except (BinaryFile, FileTooLarge) as exc:
            raise CannotRun(f"Not overwriting: {exc}") from None
        except (OSError, WorkspaceError):
            return None  # the run says what is wrong with the path
        return FileDiff(str(resolved), old, args.content)

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        try:
            resolved = ctx.workspace.scope.resolve(args.path, allow_outside=ctx.allow_outside)
            if resolved.is_dir():
                raise IsADirectoryError(args.path)
            old: str | None
            try:
                old = await ctx.workspace.read_text(resolved)
            except FileNotFoundError:
                old = None
            except (BinaryFile, FileTooLarge) as exc:
                return ToolResult.error(f"Not overwriting: {exc}")
            if old == args.content:
                return ToolResult(f"{args.path} already has exactly this content; nothing changed.")
            await ctx.workspace.write_text(resolved, args.content)
        except (OSError, WorkspaceError) as exc:
            return _failure(exc, args.path)
        diff = FileDiff(str(resolved), old, args.content)
        line_count = len(_lines(args.content))
        if old is None:
            return ToolResult(f"Created {args.path} ({line_count} lines).", diff=diff)
        added, removed = _change_counts(old, args.content)
        text = f"Overwrote {args.path} ({line_count} lines; +{added} -{removed}).\n" + _unified_diff(
            old, args.content, args.path, ctx.limits.max_output_chars
        )
        return ToolResult(text, diff=diff)


# --- patch ----------------------------------------------------------------------------


class PatchArgs(BaseModel):
    path: str = Field(description="The file to edit.")
    old_text: str = Field(
        description="The exact text to replace, including whitespace and indentation, with enough "
        "surrounding lines to be unique in the file."
    )
    new_text: str = Field(description="The text to put in its place (empty to delete it).")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


class PatchTool(Tool[PatchArgs]):
    name = "patch"
    description = (
        "Edit a file by replacing an exact piece of text with new text; the preferred way to change "
        "existing files. old_text must match the file exactly (copy it from read_file output, without "
        "the line-number prefix) and be unique unless replace_all is set. Returns the diff."
    )
    args_model = PatchArgs
    kind: ToolKind = "edit"
    needs_approval = True
    read_only = False
    approval_group = EDITS

    def title(self, args: PatchArgs, workspace: Workspace) -> str:
        return f"Edit {args.path}"

    def paths(self, args: PatchArgs) -> list[str]:
        return [args.path]

    async def preview(
        self, args: PatchArgs, workspace: Workspace, *, allow_outside: bool = False
    ) -> FileDiff | None:
        path, text, updated, _ = await _plan_patch(args, workspace, allow_outside)
        return FileDiff(str(path), text, updated)

    async def run(self, args: PatchArgs, ctx: ToolContext) -> ToolResult:
        try:
            resolved, text, updated, count = await _plan_patch(args, ctx.workspace, ctx.allow_outside)
            await ctx.workspace.write_text(resolved, updated)
        except CannotRun as exc:
            return ToolResult.error(str(exc), **(exc.args[1] if len(exc.args) > 1 else {}))
        except (OSError, WorkspaceError) as exc:
            return _failure(exc, args.path)
        what = f"{count} replacements" if count > 1 else "1 replacement"
        diff_text = _unified_diff(text, updated, args.path, ctx.limits.max_output_chars)
        return ToolResult(
            f"Edited {args.path} ({what}).\n{diff_text}",
            diff=FileDiff(str(resolved), text, updated),
            raw_output={"replacements": count},
        )


async def _plan_patch(
    args: PatchArgs, workspace: Workspace, allow_outside: bool
) -> tuple[Path, str, str, int]:
    """(path, text now, text after, replacements). CannotRun with the message the model
    reads when the patch cannot apply; OSError or WorkspaceError when the file cannot be read."""
    if not args.old_text:
        raise CannotRun(
            "old_text is empty. Give the exact text to replace (include a neighbouring line to "
            "insert next to it); to create a file use write_file."
        )
    try:
        resolved = workspace.scope.resolve(args.path, allow_outside=allow_outside)
        if resolved.is_dir():
            raise IsADirectoryError(args.path)
        text = await workspace.read_text(resolved)
    except FileNotFoundError:
        raise CannotRun(f"File not found: {args.path}. To create a new file use write_file.") from None
    except (OSError, WorkspaceError) as exc:
        raise CannotRun(_failure(exc, args.path).text) from None
    old_text, new_text = args.old_text, args.new_text
    if "\r\n" in text and "\r\n" not in old_text:  # the model writes \n; keep the file's CRLF
        old_text = old_text.replace("\n", "\r\n")
        new_text = new_text.replace("\n", "\r\n")
    if old_text == new_text:
        raise CannotRun("old_text and new_text are identical; there is nothing to change.")
    count = text.count(old_text)
    if count == 0:
        raise CannotRun(_not_found_message(text, args.old_text, args.path))
    if count > 1 and not args.replace_all:
        starts = _match_lines(text, old_text)
        shown = ", ".join(str(n) for n in starts[:_MAX_MATCH_LINES_SHOWN])
        hidden = len(starts) - _MAX_MATCH_LINES_SHOWN
        more = f" and {hidden} more" if hidden > 0 else ""
        raise CannotRun(
            f"old_text occurs {count} times in {args.path} (starting at lines {shown}{more}). "
            "Include more surrounding lines to make it unique, or set replace_all to replace "
            "every occurrence.",
            {"matches": count},
        )
    return resolved, text, text.replace(old_text, new_text, -1 if args.replace_all else 1), count


def _match_lines(text: str, needle: str) -> list[int]:
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(text.count("\n", 0, index) + 1)
        index = text.find(needle, index + len(needle))
    return starts


def _squash(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


def _not_found_message(text: str, old_text: str, path: str) -> str:
    file_lines = _lines(text)
    wanted = [_squash(line) for line in _lines(old_text)]
    while wanted and not wanted[-1]:
        wanted.pop()
    while wanted and not wanted[0]:
        wanted = wanted[1:]
    message = f"old_text was not found in {path}."
    if not wanted:
        return message + " It contains only whitespace."
    squashed = [_squash(line) for line in file_lines]
    width = len(wanted)
    for start in range(len(squashed) - width + 1):
        if squashed[start : start + width] == wanted:
            shown = "\n".join(f"{n:>6}\t{file_lines[n - 1]}" for n in range(start + 1, start + width + 1))
            return (
                f"{message} It matches lines {start + 1}-{start + width} when whitespace is ignored, "
                "so the indentation or whitespace differs. The file has:\n"
                f"{shown}\nCopy old_text from these lines exactly."
            )
    first = wanted[0]
    close = difflib.get_close_matches(first, squashed, n=1, cutoff=0.6)
    if close:
        number = squashed.index(close[0]) + 1
        message += (
            f" The line most like its first line is {number}:\n{number:>6}\t{file_lines[number - 1]}\n"
            "Read the file again to copy the current text exactly."
        )
    else:
        message += " Read the file again to copy the current text exactly."
    return message


# --- list_files -----------------------------------------------------------------------


class ListFilesArgs(BaseModel):
    path: str = Field(
        default=".", description="The directory to list, recursively; defaults to the workspace root."
    )
    glob: str | None = Field(
        default=None, description="Only list files matching this glob, e.g. `*.py` or `src/**/test_*.ts`."
    )


class ListFilesTool(Tool[ListFilesArgs]):
    name = "list_files"
    description = (
        "List the files under a directory, recursively, as paths relative to it, sorted. Respects "
        ".gitignore and skips .git. Use glob to narrow it down; use search to look inside files."
    )
    args_model = ListFilesArgs
    kind: ToolKind = "search"

    def title(self, args: ListFilesArgs, workspace: Workspace) -> str:
        only = f" ({args.glob})" if args.glob else ""
        return f"List {args.path or '.'}{only}"

    def paths(self, args: ListFilesArgs) -> list[str]:
        return [args.path or "."]

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
        path = args.path or "."
        try:
            resolved = ctx.workspace.scope.resolve(path, allow_outside=ctx.allow_outside)
        except WorkspaceError as exc:
            return ToolResult.error(str(exc))
        if not resolved.exists():
            return ToolResult.error(f"Directory not found: {path}")
        if not resolved.is_dir():
            return ToolResult.error(f"{path} is a file, not a directory; use read_file to read it.")
        rg_args = ["--files", "--hidden", "--null"]
        if args.glob:
            rg_args.append(f"--glob={args.glob}")
        rg_args += [GIT_DIR_EXCLUDED, "--", "."]
        try:
            result = await run_rg(rg_args, cwd=resolved)
        except (WorkspaceError, OSError) as exc:
            return ToolResult.error(str(exc))
        listed = result.stdout.decode("utf-8", errors="replace").split("\0")
        names = sorted(strip_dot_slash(name) for name in listed if name)
        if result.returncode == 2 and not names:
            return ToolResult.error(result.stderr or "ripgrep failed to list the files")
        only = f" matching {args.glob}" if args.glob else ""
        if not names:
            return ToolResult(f"No files{only} in {path}.", raw_output={"files": 0})
        return ToolResult(_render_listing(names, ctx, only), raw_output={"files": len(names)})


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
