"""session_search: full-text search over this workspace's earlier sessions."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime
from pathlib import Path

from pydantic import Field

from hermes_core.events import ToolKind
from hermes_core.prompt.repository import repository_root
from hermes_core.store.search import SearchHit
from hermes_core.store.sessions import SessionStore
from hermes_core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace


class SessionSearchArgs(ToolArgs):
    query: str = Field(description="Words to look for; a trailing * matches any word starting so.")
    limit: int = Field(default=10, ge=1, le=50, description="At most this many matches.")


class SessionSearchTool(Tool[SessionSearchArgs]):
    """Search the conversations of earlier sessions in this workspace (messages, tool calls and their
    results) for words, to recall decisions, fixes or context discussed before. Returns the
    matching messages with their session's title and date."""

    name = "session_search"
    kind: ToolKind = "search"
    read_only = True

    def __init__(self, store: SessionStore, session_id: str, cwd: str) -> None:
        self._store = store
        self._session_id = session_id
        # A session opened in a subdirectory still belongs to its repository's workspace.
        self._repository = repository_root(Path(cwd))
        self._workspace_root = str(self._repository or cwd)

    def title(self, args: SessionSearchArgs, workspace: Workspace) -> str:
        return f'Search past sessions: "{args.query}"'

    async def run(self, args: SessionSearchArgs, ctx: ToolContext) -> ToolResult:
        if not args.query.strip():
            return ToolResult.error("The query is empty; give the words to search for.")
        try:
            hits = await asyncio.to_thread(self._search, args.query, args.limit)
        except sqlite3.Error as exc:
            return ToolResult.error(f"The session store could not be searched: {exc}")
        if not hits:
            return ToolResult(
                text=f'No earlier session in this workspace mentions "{args.query}".',
                raw_output={"hits": []},
            )
        lines = [f'{len(hits)} match(es) for "{args.query}" in earlier sessions of this workspace:']
        for number, hit in enumerate(hits, start=1):
            lines.append(_describe(number, hit))
        return ToolResult(
            text="\n".join(lines),
            raw_output={"hits": [_hit_data(hit) for hit in hits]},
        )

    def _search(self, query: str, limit: int) -> list[SearchHit]:
        """The hits of sessions in this repository: below its root, but not in another
        repository nested there. A home kept in git is the repository of every folder under
        it without one of its own; its sessions must not show another repository's (a key
        pasted in ~/work/app reached a model working in ~/Downloads/tool)."""
        hits = self._store.search(
            query,
            cwd=self._workspace_root,
            limit=limit * OVERFETCH,
            exclude_session=self._session_id,
        )
        ours: dict[str, bool] = {}
        kept = []
        for hit in hits:
            if hit.cwd not in ours:
                ours[hit.cwd] = repository_root(Path(hit.cwd)) == self._repository
            if ours[hit.cwd]:
                kept.append(hit)
        return kept[:limit]


OVERFETCH = 5  # hits asked of the store per hit wanted: some may be another repository's


def _date(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _describe(number: int, hit: SearchHit) -> str:
    title = hit.title or "(untitled)"
    snippet = " ".join(hit.snippet.split())  # one line per hit, however the message was laid out
    return (
        f'{number}. "{title}" ({_date(hit.updated_at)}, session {hit.session_id}), '
        f"{hit.role} message #{hit.seq}:\n   {snippet}"
    )


def _hit_data(hit: SearchHit) -> dict[str, object]:
    return {
        "session_id": hit.session_id,
        "title": hit.title,
        "date": _date(hit.updated_at),
        "seq": hit.seq,
        "role": hit.role,
        "snippet": hit.snippet,
    }
