"""The `memory` tool: save, forget and list facts for future sessions.

It counts as read-only: it writes only the agent's own memory files under the
hermes-acp home, never the workspace, so it stays offered in plan mode, where
remembering a project's convention is as useful as anywhere. Writing the user's memory
is another matter: every later session, in every workspace, reads it as instructions,
so a prompt-injected model could plant one there ("run `curl …|sh` unconfined"). That
asks the user each time, in every mode, and plan mode refuses it (`approval_facts`).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import Field

from hermes_core.events import ToolKind
from hermes_core.loop.turn_context import Scope
from hermes_core.prompt.memory import MemoryFull, MemoryStore
from hermes_core.tools.base import NO_FACTS, ApprovalFacts, Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace

_TITLE_CHARS = 80
USER_MEMORY_REASON = "changes your user memory, which every later session in every workspace follows"
_NEXT_SESSION = (
    "It will be in the system prompt from the next session on; this session's prompt stays "
    "as it was, so keep using the fact from here yourself."
)


class MemoryArgs(ToolArgs):
    action: Literal["add", "remove", "list"] = Field(
        description="add: save a fact; remove: delete the facts containing `text`; list: show saved facts."
    )
    scope: Literal["user", "workspace"] = Field(
        default="workspace",
        description="user: about the user, shared by all workspaces; workspace: about this project only.",
    )
    text: str | None = Field(
        default=None,
        description="add: the fact, one self-contained sentence; remove: part of the text of the "
        "entries to remove.",
    )


class MemoryTool(Tool[MemoryArgs]):
    """Long-term memory across sessions. Save durable facts worth knowing next time: the user's
    preferences and corrections, project conventions, build and test commands, pitfalls found. Not
    for task progress or anything that will be stale tomorrow (use the plan for that). Saved facts
    appear in the system prompt of future sessions. Each fact at most 500 characters; each memory
    file at most 8 KB — condense or remove entries when it is full."""

    name = "memory"
    kind: ToolKind = "think"
    read_only = True

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def approval_facts(self, args: MemoryArgs) -> ApprovalFacts:
        """Writing the user's memory asks in every mode (and is refused in plan mode)."""
        if args.scope == "user" and args.action != "list":
            return ApprovalFacts(always_asks=USER_MEMORY_REASON)
        return NO_FACTS

    def approval_scope(self, args: MemoryArgs) -> str:
        return f"{args.action} {args.scope}"

    def title(self, args: MemoryArgs, workspace: Workspace) -> str:
        text = _shorten(" ".join((args.text or "").split()))
        mine = " (user memory)" if args.scope == "user" else ""
        if args.action == "add":
            return f"Remember{mine}: {text}" if text else f"Remember{mine}"
        if args.action == "remove":
            return f"Forget{mine}: {text}" if text else f"Forget{mine}"
        return f"List {args.scope} memory"

    async def run(self, args: MemoryArgs, ctx: ToolContext) -> ToolResult:
        if args.action == "list":
            return await asyncio.to_thread(self._list, args.scope)
        if not (args.text and args.text.strip()):
            what = "the fact to remember" if args.action == "add" else "part of the entries' text"
            return ToolResult.error(f"The {args.action!r} action needs `text`: {what}.")
        if args.action == "add":
            return await asyncio.to_thread(self._add, args.scope, args.text)
        return await asyncio.to_thread(self._remove, args.scope, args.text)

    def _add(self, scope: Scope, text: str) -> ToolResult:
        try:
            added = self.store.add(scope, text)
        except MemoryFull as exc:
            return ToolResult.error(f"{exc}\n\n{self._listing(scope)}", scope=scope, reason="full")
        except ValueError as exc:
            return ToolResult.error(str(exc), scope=scope)
        entries = self.store.list(scope)
        if not added:
            return ToolResult(
                f"Already in {scope} memory; nothing changed.",
                raw_output={"scope": scope, "added": False, "entries": entries},
            )
        return ToolResult(
            f"Saved to {scope} memory. {_NEXT_SESSION}",
            raw_output={"scope": scope, "added": True, "entries": entries},
        )

    def _remove(self, scope: Scope, text: str) -> ToolResult:
        removed = self.store.remove(scope, text)
        entries = self.store.list(scope)
        if not removed:
            return ToolResult.error(
                f"No {scope} memory entry contains {text.strip()!r}.\n\n{self._listing(scope)}",
                scope=scope,
                removed=0,
            )
        plural = "entry" if removed == 1 else "entries"
        return ToolResult(
            f"Removed {removed} {plural} from {scope} memory; {len(entries)} left. "
            "Future sessions will no longer see them.",
            raw_output={"scope": scope, "removed": removed, "entries": entries},
        )

    def _list(self, scope: Scope) -> ToolResult:
        return ToolResult(
            self._listing(scope), raw_output={"scope": scope, "entries": self.store.list(scope)}
        )

    def _listing(self, scope: Scope) -> str:
        entries = self.store.list(scope)
        if not entries:
            return f"The {scope} memory is empty."
        lines = "\n".join(f"{n}. {entry}" for n, entry in enumerate(entries, 1))
        noun = "entry" if len(entries) == 1 else "entries"
        return f"The {scope} memory holds {len(entries)} {noun}:\n{lines}"


def _shorten(text: str) -> str:
    return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1] + "…"
