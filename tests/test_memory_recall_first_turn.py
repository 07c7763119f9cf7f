"""A session's first turn with no memory file at all recalls nothing without reading in
a thread (two stats on the loop say there is nothing), and a fact saved after it is still
recalled at the next turn."""

from __future__ import annotations

from pathlib import Path

from hermes_core.prompt.memory import MemoryStore
from hermes_core.prompt.recall import MemoryRecall


def test_no_memory_file_needs_no_read_and_a_later_fact_is_still_recalled(tmp_path: Path) -> None:
    memory = MemoryStore(tmp_path / "memory", tmp_path / "project")
    recall = MemoryRecall(memory, "You are terse.")
    assert recall.unchanged(), "nothing to read at the first turn"
    assert recall.unchanged()

    MemoryStore(tmp_path / "memory", tmp_path / "project").add("user", "Prefers answers in French")
    assert not recall.unchanged()
    assert recall.fresh([]) == "- Prefers answers in French"


def test_a_memory_file_there_from_the_start_is_read_at_the_first_turn(tmp_path: Path) -> None:
    MemoryStore(tmp_path / "memory", tmp_path / "project").add("workspace", "Releases are tagged vX.Y")
    memory = MemoryStore(tmp_path / "memory", tmp_path / "project")
    recall = MemoryRecall(memory, "You are terse.")  # a system prompt without the fact
    assert not recall.unchanged()
    assert recall.fresh([]) == "- Releases are tagged vX.Y"
