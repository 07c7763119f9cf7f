"""patch: replace an exact piece of a file's text, with messages that help the model
find the text it meant when it does not match."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from pydantic import Field

from hermes_core.events import FileDiff
from hermes_core.tools.base import CannotRun, ToolContext, ToolResult
from hermes_core.tools.files import FileEditTool, PathArgs, path_failure, text_lines, unified_diff
from hermes_core.workspace import Workspace, WorkspaceError

_MAX_MATCH_LINES_SHOWN = 20


class PatchArgs(PathArgs):
    path: str = Field(description="The file to edit.")
    old_text: str = Field(
        description="The exact text to replace, including whitespace and indentation, with enough "
        "surrounding lines to be unique in the file."
    )
    new_text: str = Field(description="The text to put in its place (empty to delete it).")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


class PatchTool(FileEditTool[PatchArgs]):
    """Edit a file by replacing an exact piece of text with new text; the preferred way to change
    existing files. old_text must match the file exactly (copy it from read_file output, without
    the line-number prefix) and be unique unless replace_all is set. Returns the diff."""

    name = "patch"
    verb = "Edit"

    async def change(
        self, args: PatchArgs, workspace: Workspace, allow_outside: bool
    ) -> tuple[Path, str, str]:
        path, text, updated, _ = await _plan_patch(args, workspace, allow_outside)
        return path, text, updated

    async def run(self, args: PatchArgs, ctx: ToolContext) -> ToolResult:
        try:
            resolved, text, updated, count = await _plan_patch(args, ctx.workspace, ctx.allow_outside)
            await ctx.workspace.write_text(args.path, updated, allow_outside=ctx.allow_outside)
        except CannotRun as exc:
            return ToolResult.error(str(exc), **(exc.args[1] if len(exc.args) > 1 else {}))
        except (OSError, WorkspaceError) as exc:
            return path_failure(exc, args.path)
        what = f"{count} replacements" if count > 1 else "1 replacement"
        diff_text = unified_diff(text, updated, args.path, ctx.limits.max_output_chars)
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
        text = await workspace.read_text(args.path, allow_outside=allow_outside)
    except FileNotFoundError:
        raise CannotRun(f"File not found: {args.path}. To create a new file use write_file.") from None
    except (OSError, WorkspaceError) as exc:
        raise CannotRun(path_failure(exc, args.path).text) from None
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
    # The name for the card: the workspace opened the file (and refuses one outside).
    resolved = workspace.scope.absolute(args.path)
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
    file_lines = text_lines(text)
    wanted = [_squash(line) for line in text_lines(old_text)]
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
