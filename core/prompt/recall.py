"""Memory the model has not seen yet: facts saved since the system prompt was fixed (by
another session, or by hand), recalled once at the start of the next turn."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from hermes_core.messages import Message
from hermes_core.prompt.memory import MemoryStore
from hermes_core.prompt.repository import repository_root

log = logging.getLogger(__name__)


def repository_memory(memory_dir: Path, cwd: Path) -> MemoryStore:
    """One memory per repository, whichever of its directories a session was opened in."""
    return MemoryStore(memory_dir, repository_root(cwd) or cwd)


class MemoryRecall:
    def __init__(self, memory: MemoryStore, system_prompt: str) -> None:
        self._memory = memory
        self._system_prompt = system_prompt
        self._known: set[str] | None = None  # facts the model has seen; filled on first use

    def fresh(self, messages: list[Message]) -> str | None:
        """The facts the model has not seen, one line each (None: nothing new)."""
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
