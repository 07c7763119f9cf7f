"""Full-text search over every stored message (the `session_search` tool's engine).

An external-content FTS5 index over each message's `search_text` (see `schema`), kept in
step by triggers. Queries are plain words, as a model writes them.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
Read = Callable[[Callable[[sqlite3.Connection], T]], T]


@dataclass(frozen=True, slots=True)
class SearchHit:
    session_id: str
    title: str | None
    seq: int
    role: str
    snippet: str  # matched words wrapped in **...**
    updated_at: float  # the session's last activity
    cwd: str = ""  # the session's working directory


def search_messages(
    read: Read[list[Any]], query: str, cwd: str | None, limit: int, exclude_session: str | None
) -> list[SearchHit]:
    """Messages matching every word of the query (any word, if none matches all), best first.

    FTS5 syntax in the query is taken literally, except a trailing `*` which keeps its
    prefix meaning.
    """
    terms = _query_terms(query)
    if not terms or limit < 1:
        return []
    hits = _search(read, " ".join(terms), cwd, limit, exclude_session)
    if not hits and len(terms) > 1:
        hits = _search(read, " OR ".join(terms), cwd, limit, exclude_session)
    return hits


def _search(
    read: Read[list[Any]], match: str, cwd: str | None, limit: int, exclude_session: str | None
) -> list[SearchHit]:
    conditions = ["messages_fts MATCH ?"]
    params: list[Any] = [match]
    if cwd is not None:  # the directory and everything below it: one repository's sessions
        root = cwd.rstrip("/") or "/"
        below = root.rstrip("/") + "/"  # compared exactly: LIKE would fold case
        conditions.append("(s.cwd = ? OR substr(s.cwd, 1, ?) = ?)")
        params += [root, len(below), below]
    if exclude_session is not None:
        conditions.append("COALESCE(s.compacted_into, s.id) != ?")
        params.append(exclude_session)
    sql = f"""
        SELECT COALESCE(s.compacted_into, s.id), s.title, m.seq, m.role,
               snippet(messages_fts, 0, '**', '**', '…', 16), s.updated_at, s.cwd
        FROM messages_fts
        JOIN messages AS m ON m.id = messages_fts.rowid
        JOIN sessions AS s ON s.id = m.session_id
        WHERE {" AND ".join(conditions)}
        ORDER BY messages_fts.rank
        LIMIT ?
    """
    try:
        rows = read(lambda conn: conn.execute(sql, (*params, limit)).fetchall())
    except sqlite3.OperationalError as exc:
        if "fts5" not in str(exc).lower():
            raise
        # Every term is quoted, so this should not happen; a model's query must
        # never turn into a failed tool call all the same.
        log.warning("full-text query %r rejected: %s", match, exc)
        return []
    return [SearchHit(*row) for row in rows]


def _query_terms(query: str) -> list[str]:
    """The query's words as quoted FTS5 strings, so no character in it is syntax."""
    terms = []
    for word in query.split():
        if word in ("AND", "OR", "NOT", "NEAR"):
            continue  # the model meant an operator; matching "and" would only narrow
        prefix = word.endswith("*")
        word = word.rstrip("*")
        if not any(ch.isalnum() for ch in word):
            continue  # punctuation alone tokenizes to nothing
        quoted = '"' + word.replace('"', '""') + '"'
        terms.append(quoted + "*" if prefix else quoted)
    return terms
