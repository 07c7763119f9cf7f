"""Long-term memory: small Markdown files of facts the agent saved for later sessions.

One file per user (`<memory_dir>/user.md`) and one per workspace
(`<memory_dir>/workspaces/<sha256(root)[:16]>.md`, its first line naming the root).
A fact is one bullet line. Lines that are not bullets (a header, notes a person wrote
by hand) are kept as they are and never shown as facts.

Writes replace the file atomically; a lock file serialises the read-modify-write so
two hermes-acp processes adding at the same moment both keep their facts.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from hermes_core.errors import InvalidInput
from hermes_core.fence.beneath import replace_in
from hermes_core.loop.turn_context import BULLETS, MemoryFiles, Scope, fact_text, facts_in, is_fact

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; atomic replace still avoids torn files
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

MAX_FACT_CHARS = 500
MAX_FILE_BYTES = 8 * 1024
_PRIVATE = 0o600  # what the agent learnt about the user is the user's alone
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class MemoryFull(InvalidInput):
    """Saving would make a memory file larger than its limit."""


class MemoryStore(MemoryFiles):
    """Memory written: facts added and removed, one process at a time per file. What a
    turn reads (`all_facts`, `render`) is `MemoryFiles`, in the module a turn runs."""

    def add(self, scope: Scope, fact: str) -> bool:
        """Save a fact; False when the same fact is already saved.

        Raises ValueError for an empty or too long fact and MemoryFull when the file
        would pass its size limit; both messages tell the model what to do instead.
        """
        fact = normalize_fact(fact)
        with self._locked(scope):
            lines = self._read_lines(scope)
            if fact in facts_in(lines):
                return False
            if not lines:
                lines = [self._headers[scope], ""]
            lines.append(f"- {fact}")
            text = _join(lines)
            size = len(text.encode("utf-8"))
            if size > MAX_FILE_BYTES:
                raise MemoryFull(
                    f"The {scope} memory is full: saving this would make it {size} bytes, over the "
                    f"{MAX_FILE_BYTES}-byte limit. Remove entries that are outdated, or condense several "
                    "related entries into one (remove them, then add the condensed fact), and try again."
                )
            self._write(scope, text)
            self.added_here.add(fact)
            return True

    def remove(self, scope: Scope, text_substring: str) -> int:
        """Remove every fact containing the text (case-insensitive); how many went."""
        needle = text_substring.strip().casefold()
        if not needle:
            raise ValueError("Say which entries to remove: give part of their text.")
        with self._locked(scope):
            lines = self._read_lines(scope)
            kept = [line for line in lines if not (is_fact(line) and needle in fact_text(line).casefold())]
            removed = len(lines) - len(kept)
            if removed:
                self._write(scope, _join(kept))
            return removed

    def _write(self, scope: Scope, text: str) -> None:
        path = self.path(scope)
        directory = os.open(path.parent, _DIRECTORY_FLAGS)
        try:
            replace_in(directory, path.name, text.encode("utf-8"), _PRIVATE)
        finally:
            os.close(directory)

    @contextlib.contextmanager
    def _locked(self, scope: Scope) -> Iterator[None]:
        path = self.path(scope)
        path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            yield
            return
        # A separate lock file: the memory file itself is replaced on every write, so a
        # lock on it would guard an inode nobody else opens any more.
        with open(path.with_name(path.name + ".lock"), "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def normalize_fact(fact: str) -> str:
    """One line, no bullet of its own, within the length limit."""
    text = " ".join(fact.split())
    if text.startswith(BULLETS):
        text = text[2:].strip()
    if not text:
        raise ValueError("The fact to remember is empty.")
    if len(text) > MAX_FACT_CHARS:
        raise ValueError(
            f"The fact is {len(text)} characters; the limit is {MAX_FACT_CHARS}. "
            "Condense it to the essential point (or split it into separate facts) and try again."
        )
    return text


def _join(lines: list[str]) -> str:
    return "\n".join(lines).rstrip("\n") + "\n"
