"""Memory the model has not seen yet: facts saved since the system prompt was fixed (by
another session, or by hand), recalled once at the start of the next turn."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from hermes_core.loop.turn_context import SCOPES
from hermes_core.messages import Message
from hermes_core.prompt.memory import MemoryStore
from hermes_core.prompt.repository import repository_root

log = logging.getLogger(__name__)

# A file's times are the kernel's coarse clock: a change this close to a stat may leave the
# same times behind it (and, in place, the same size), so such a stat proves nothing.
RACY_NS = 2_000_000_000

# What a stat says of a memory file: (device, inode, size, mtime, ctime), None when absent.
FileState = tuple[int, int, int, int, int] | None


def repository_memory(memory_dir: Path, cwd: Path) -> MemoryStore:
    """One memory per repository, whichever of its directories a session was opened in."""
    return MemoryStore(memory_dir, repository_root(cwd) or cwd)


class MemoryRecall:
    def __init__(self, memory: MemoryStore, system_prompt: str) -> None:
        self._memory = memory
        self._system_prompt = system_prompt
        self._known: set[str] | None = None  # facts the model has seen; filled on first use
        self._read_at: list[FileState] | None = None  # the files as `fresh` last read them

    def unchanged(self) -> bool:
        """True when neither memory file changed since `fresh` last read them, so it would
        find nothing new: a stat of each instead of a read in a thread at every turn start
        (a tenth of the event loop's time with fifty sessions at once)."""
        try:
            states = self._states()
        except OSError:
            return False
        if self._read_at is None:
            if any(state is not None for state in states):
                return False
            # No memory file at all: what `fresh` would make of them, without a thread hop
            # at each session's first turn (fifty sessions starting at once queue for them).
            self._read_at, self._known = states, set() if self._known is None else self._known
            return True
        return states == self._read_at

    def _states(self) -> list[FileState]:
        states: list[FileState] = []
        for scope in SCOPES:
            try:
                stat = os.stat(self._memory.path(scope))
            except FileNotFoundError:
                states.append(None)
            else:
                states.append((stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))
        return states

    def _settled_states(self) -> list[FileState] | None:
        """The files' states, taken before they are read (a write after it changes them),
        or None when a file changed too recently for its state to tell a later change."""
        try:
            states = self._states()
        except OSError:
            return None
        now = time.time_ns()
        if any(state is not None and now - max(state[3], state[4]) < RACY_NS for state in states):
            return None
        return states

    def fresh(self, messages: list[Message]) -> str | None:
        """The facts the model has not seen, one line each (None: nothing new)."""
        self._read_at = self._settled_states()
        try:
            facts = self._memory.all_facts()
        except OSError as exc:
            log.warning("cannot read memory: %s", exc)
            return None
        if self._known is None:
            # In the system prompt, or already in the conversation (recalled by an earlier
            # turn, or saved by the model itself): nothing to repeat.
            seen = [self._system_prompt, *(_message_words(m) for m in messages)]
            self._known = {fact for fact in facts if any(fact in text for text in seen)}
        known = self._known | self._memory.added_here
        fresh = [fact for fact in facts if fact not in known]
        self._known.update(fresh)
        return "\n".join(f"- {fact}" for fact in fresh) or None


def _message_words(message: Message) -> str:
    """The message's text and its tool calls' arguments (JSON, unescaped where it parses)."""
    parts = [message.text]
    for call in message.tool_calls:
        try:
            parts.append(str(json.loads(call.arguments)))
        except ValueError:
            parts.append(call.arguments)
    return "\n".join(parts)
