"""What each turn needs besides the conversation, in one place (a plain prompt runs
this module and no other of context, memory and the watcher):

- the preamble the loop puts before the user's text: files the user changed since the
  last turn, memory saved elsewhere that the model has not seen;
- the token estimate of a request, checked before every model call to decide on
  compression;
- the turn-facing halves of the memory files and of the workspace watcher (their
  readers and bookkeeping; writing memory is `hermes_core.prompt.memory`, watching is
  `hermes_core.changes.watch`).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Literal

from hermes_core.messages import Growth, Message, TextPart
from hermes_core.providers.base import ToolSpec

# ---------------------------------------------------------------------------
# The turn's preamble

MAX_CHANGED_FILES = 20


def turn_preamble(changed_files: list[str], recalled_memory: str | None) -> str | None:
    """Context the loop puts before the user's message text; None when there is none."""
    parts = []
    files = list(dict.fromkeys(f for f in changed_files if f))
    if files:
        shown = files[:MAX_CHANGED_FILES]
        lines = [f"- {name}" for name in shown]
        if len(files) > len(shown):
            lines.append(f"- … and {len(files) - len(shown)} more")
        parts.append(
            "Files changed in the workspace since your last turn (by the user or another program; "
            "re-read them before relying on earlier contents):\n" + "\n".join(lines)
        )
    if recalled_memory and recalled_memory.strip():
        parts.append("Recalled from memory:\n" + recalled_memory.strip())
    if not parts:
        return None
    return f"{_TURN_CONTEXT_OPEN}\n" + "\n\n".join(parts) + f"\n{_TURN_CONTEXT_CLOSE}"


_TURN_CONTEXT_OPEN, _TURN_CONTEXT_CLOSE = "<turn-context>", "</turn-context>"


def without_turn_preamble(text: str) -> str:
    """What the user typed, without the context the loop put before it."""
    if not text.startswith(_TURN_CONTEXT_OPEN + "\n"):
        return text
    end = text.find(_TURN_CONTEXT_CLOSE)
    return text if end < 0 else text[end + len(_TURN_CONTEXT_CLOSE) :].lstrip("\n")


# ---------------------------------------------------------------------------
# Token estimates

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_000  # providers charge roughly 500-1,600 per image; one flat guess
MESSAGE_OVERHEAD_TOKENS = 4  # role and framing
TOOL_CALL_OVERHEAD_TOKENS = 8


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_message_tokens(message: Message) -> int:
    """The message's estimate, counted once while it stays as it is (`Message.memoised`):
    every model call estimates the whole history."""
    memo = message.memo
    if memo is not None and "tokens" in memo:  # the common case, kept to a lookup
        return memo["tokens"]
    return message.memoised("tokens", _count_message_tokens)


def _count_message_tokens(message: Message) -> int:
    chars = len(message.reasoning) if message.reasoning else 0
    tokens = MESSAGE_OVERHEAD_TOKENS
    content = message.content
    if isinstance(content, str):
        chars += len(content)
    else:
        for part in content:
            if isinstance(part, TextPart):
                chars += len(part.text)
            else:
                tokens += IMAGE_TOKENS
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
        tokens += TOOL_CALL_OVERHEAD_TOKENS
    return tokens + -(-chars // CHARS_PER_TOKEN)


def estimate_tool_tokens(spec: ToolSpec) -> int:
    schema = json.dumps(spec.parameters, separators=(",", ":"))
    return TOOL_CALL_OVERHEAD_TOKENS + estimate_tokens(spec.name + spec.description + schema)


def estimate_messages_tokens(system: str, messages: list[Message], tools: list[ToolSpec]) -> int:
    """The estimated size of a whole request: cheap enough for every model call.

    A message costs a few len() calls the first time (images count flat, never by their
    base64) and a lookup after that; a tool spec one small JSON dump.
    """
    total = estimate_tokens(system)
    for message in messages:
        total += estimate_message_tokens(message)
    for spec in tools:
        total += estimate_tool_tokens(spec)
    return total


class HistoryEstimate:
    """`estimate_messages_tokens` of a session's requests, counting only the messages the
    history gained since the last call (`Growth`); the system prompt and the tool list
    are counted again only when they are other objects than last time."""

    def __init__(self) -> None:
        self._growth = Growth()
        self._messages = 0
        self._fixed: tuple[str, list[ToolSpec], int] | None = None

    def of(self, system: str, messages: list[Message], tools: list[ToolSpec]) -> int:
        continued, added = self._growth.added(messages)
        if not continued:
            self._messages = 0
        self._messages += sum(map(estimate_message_tokens, added))
        fixed = self._fixed
        if fixed is None or fixed[0] is not system or fixed[1] is not tools:
            count = estimate_tokens(system) + sum(map(estimate_tool_tokens, tools))
            fixed = self._fixed = (system, tools, count)
        return fixed[2] + self._messages


def should_compress(context_tokens: int, context_window: int, threshold: float) -> bool:
    if context_window <= 0:
        return False
    return context_tokens >= context_window * threshold


# ---------------------------------------------------------------------------
# Memory, read (each turn recalls what was saved elsewhere; `hermes_core.prompt.memory` writes)

Scope = Literal["user", "workspace"]
SCOPES: tuple[Scope, ...] = ("user", "workspace")
BULLETS = ("- ", "* ")


class MemoryFiles:
    """The memory files of a user and a workspace, read. The format is `hermes_core.prompt.memory`'s."""

    def __init__(self, home_memory_dir: Path, workspace_root: Path) -> None:
        self.memory_dir = Path(home_memory_dir)
        self.workspace_root = Path(workspace_root).resolve()
        digest = hashlib.sha256(str(self.workspace_root).encode("utf-8")).hexdigest()[:16]
        self._paths: dict[Scope, Path] = {
            "user": self.memory_dir / "user.md",
            "workspace": self.memory_dir / "workspaces" / f"{digest}.md",
        }
        self._headers: dict[Scope, str] = {
            "user": "# hermes-acp memory: user",
            "workspace": f"# hermes-acp memory: workspace {self.workspace_root}",
        }
        self.added_here: set[str] = set()  # facts saved through this store: their saver knows them

    def path(self, scope: Scope) -> Path:
        return self._paths[check_scope(scope)]

    def list(self, scope: Scope) -> list[str]:
        return facts_in(self._read_lines(scope))

    def all_facts(self) -> builtins.list[str]:  # `list` here is the method above
        """Every saved fact, user scope first."""
        return [fact for scope in SCOPES for fact in self.list(scope)]

    def render(self) -> str:
        """Both files' facts as Markdown for the system prompt; "" when there are none."""
        sections = []
        titles: dict[Scope, str] = {
            "user": "About the user (all workspaces)",
            "workspace": f"About this workspace ({self.workspace_root})",
        }
        for scope in SCOPES:
            facts = self.list(scope)
            if facts:
                bullets = "\n".join(f"- {fact}" for fact in facts)
                sections.append(f"### {titles[scope]}\n{bullets}")
        return "\n\n".join(sections)

    def _read_lines(self, scope: Scope) -> builtins.list[str]:
        try:
            text = self.path(scope).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        return text.splitlines()


def check_scope(scope: str) -> Scope:
    if scope not in SCOPES:
        raise ValueError(f"Unknown memory scope {scope!r}; use 'user' or 'workspace'.")
    return scope


def is_fact(line: str) -> bool:
    return line.startswith(BULLETS) and bool(line[2:].strip())


def fact_text(line: str) -> str:
    return line[2:].strip()


def facts_in(lines: list[str]) -> list[str]:
    return [fact_text(line) for line in lines if is_fact(line)]


# ---------------------------------------------------------------------------
# Files the user changed: the watcher's turn side (`hermes_core.changes.watch` does the watching)

MAX_TRACKED_PATHS = 10_000  # changed paths remembered between drains; the rest are only counted


class ChangeLedger:
    """Who changed which file, and when the turns ran: what the loop asks of the workspace
    watcher each turn. The watching itself (`WorkspaceWatcher` in `hermes_core.changes.watch`) fills
    it from its thread with `record()`, and starts in `_begin()`."""

    def __init__(self, max_entries: int) -> None:
        self._max_entries = max(1, max_entries)
        self._roots: list[str] = []
        self._lock = threading.Lock()
        self._in_turn = False
        self._turns: deque[tuple[int, int | None]] = deque(maxlen=4)  # (started, finished) wall ns
        self._last_boundary: float | None = None  # monotonic time of the last turn_started/finished
        self._pending: dict[str, bool] = {}  # path -> was created since the last drain
        self._overflow = 0
        self._started = False
        self._closed = False

    async def start(self) -> None:
        """Walk the workspace and begin watching; returns once changes will be noticed.

        Idempotent. Never raises for a filesystem problem: it logs and watches less.
        """
        if self._started or self._closed:
            return
        self._started = True
        await self._begin()

    async def _begin(self) -> None:
        raise NotImplementedError

    @property
    def pending(self) -> int:
        """How many user-changed paths the next drain will look at (before it drops the
        ones that came and went)."""
        with self._lock:
            return len(self._pending) + self._overflow

    def turn_started(self) -> None:
        """From now on changes are the agent's own work."""
        with self._lock:
            if self._in_turn:
                return
            self._in_turn = True
            self._turns.append((time.time_ns(), None))
            self._last_boundary = time.monotonic()

    def turn_finished(self) -> None:
        """From now on changes are the user's."""
        with self._lock:
            if not self._in_turn:
                return
            self._in_turn = False
            started, _ = self._turns[-1]
            self._turns[-1] = (started, time.time_ns())
            self._last_boundary = time.monotonic()

    def turn_state(self) -> tuple[bool, float | None, tuple[tuple[int, int | None], ...]]:
        """(in a turn now, monotonic time of the last boundary, the recent turns)."""
        with self._lock:
            return self._in_turn, self._last_boundary, tuple(self._turns)

    def record(self, agents: list[str], users: dict[str, bool]) -> None:
        """Changes judged: the agent's (they cancel the user's), the user's (path -> created)."""
        with self._lock:
            for path in agents:
                # The agent's later change supersedes the user's: it saw the file to edit it.
                self._pending.pop(path, None)
            for path, created in users.items():
                if path in self._pending:
                    self._pending[path] = self._pending[path] or created
                elif len(self._pending) < MAX_TRACKED_PATHS:
                    self._pending[path] = created
                else:
                    self._overflow += 1

    def drain(self) -> list[str]:
        """Files the user changed since the last drain, sorted; then forgets them.

        Paths are relative to the first root when inside it (POSIX separators), else
        absolute; removed files end in " (deleted)", and a removed directory is one
        "dir/ (deleted)" line for everything it held. Files created and removed again
        in between, and directories that still exist, are left out. At most
        `max_entries` entries: when there are more, the last one says "… and N more".
        """
        with self._lock:
            pending, self._pending = self._pending, {}
            overflow, self._overflow = self._overflow, 0
        present: list[str] = []
        deleted: list[str] = []
        for path, created in pending.items():
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    continue
                exists = os.path.lexists(path)
            except OSError:
                exists = False
            if exists:
                present.append(path)
            elif not created:
                deleted.append(path)
        # A removed directory stands for the files it held: one line for `rm -rf build/`.
        deleted_set = set(deleted)
        removed_dirs: set[str] = set()
        kept: list[str] = []
        for path in deleted:
            removed_parents = [parent for parent in parents(path) if parent in deleted_set]
            if removed_parents:
                removed_dirs.update(removed_parents)
            else:
                kept.append(path)
        entries = sorted(
            [self._display(p) for p in present]
            + [f"{self._display(p)}{'/' if p in removed_dirs else ''} (deleted)" for p in kept]
        )
        total = len(entries) + overflow
        if total <= self._max_entries:
            return entries
        shown = entries[: self._max_entries - 1]
        return [*shown, f"… and {total - len(shown)} more"]

    def _display(self, path: str) -> str:
        first = self._roots[0] if self._roots else None
        if first is not None and is_within(path, first) and path != first:
            return Path(os.path.relpath(path, first)).as_posix()
        return path


def is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def parents(path: str) -> list[str]:
    found = []
    current = os.path.dirname(path)
    while current and current != path:
        found.append(current)
        path, current = current, os.path.dirname(current)
    return found
