"""The `search` tool: ripgrep over the workspace, through the Workspace port's `search`
(`hermes_core.fence.ripgrep` opens what rg reads and keeps secrets out)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pydantic import Field

from hermes_core.events import ToolKind
from hermes_core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from hermes_core.workspace import Found

_MATCH_LINE_CHARS = 300


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SearchArgs(ToolArgs):
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
        try:
            found = await ctx.workspace.search(
                args.path or ".",
                args.pattern,
                glob=args.glob,
                case_sensitive=args.case_sensitive,
                allow_outside=ctx.allow_outside,
            )
        except FileNotFoundError:
            return ToolResult.error(f"Path not found: {args.path}")
        except (OSError, WorkspaceError) as exc:
            return ToolResult.error(str(exc))
        if ctx.read_guard is not None:
            found = _unguarded(found, ctx)
        matches, notes = found.matches, found.notes
        if found.returncode == 2 and not matches:
            error = found.stderr or "ripgrep failed"
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
        return ToolResult(_render(found, ctx), raw_output={"matches": len(matches), "cut": found.cut})


def _unguarded(found: Found, ctx: ToolContext) -> Found:
    """The matches and rg's notes ("binary file matches") outside the files a deny or ask
    `Read(…)` rule guards: the call named a folder, which no rule may name, and their lines
    reached the model whatever the rule said. Left out without a word: a note that says
    "N lines left out" is an answer to whether a guarded file holds the pattern, which a
    model can ask a character at a time."""
    assert ctx.read_guard is not None
    scope = ctx.workspace.scope
    by_file: dict[str, bool] = {}

    def guarded(path: str) -> bool:
        if path not in by_file:
            by_file[path] = (
                ctx.read_guard is not None and ctx.read_guard(str(scope.absolute(path))) is not None
            )
        return by_file[path]

    kept = [match for match in found.matches if not guarded(match.path)]
    notes = [note for note in found.notes if not guarded(note.partition(": ")[0])]
    if len(kept) == len(found.matches) and len(notes) == len(found.notes):
        return found
    return dataclasses.replace(found, matches=kept, notes=notes)


def _render(result: Found, ctx: ToolContext) -> str:
    matches, notes = result.matches, result.notes
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
