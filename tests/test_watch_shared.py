"""Workspace watchers of the same roots share one kernel watcher (one thread, one inotify
instance), each judging the changes against its own turns; the last to close stops it."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from hermes_core.changes.watch import WorkspaceWatcher
from tests.test_watch import LATE, drain_settled, until, write

THREAD = "hermes-workspace-watcher"


def user_files(drained: list[str]) -> list[str]:
    """Without the markers `drain_settled` moved in for another watcher of the same root."""
    return [path for path in drained if not path.startswith("zz_settled_")]


def watcher_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == THREAD)


async def test_two_watchers_of_one_root_share_a_thread_until_the_last_closes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    first = WorkspaceWatcher([root], debounce_ms=10, grace_ms=LATE)
    second = WorkspaceWatcher([root], debounce_ms=10, grace_ms=LATE)
    await first.start()
    await second.start()
    try:
        assert first.watching and second.watching
        assert watcher_threads() == 1

        write(root / "a.txt")
        assert await drain_settled(first, root, 1) == ["a.txt"]
        assert user_files(await drain_settled(second, root, 2)) == ["a.txt"]  # and the first's marker

        first.drain()  # the second's marker
        await first.aclose()
        assert not first.watching and second.watching
        assert watcher_threads() == 1
        write(root / "b.txt")
        assert user_files(await drain_settled(second, root, 1)) == ["b.txt"]
        assert first.drain() == []
    finally:
        await first.aclose()
        await second.aclose()
    await until(lambda: watcher_threads() == 0)
    assert second.watched_directories == 0


async def test_other_roots_get_a_watcher_of_their_own(tmp_path: Path) -> None:
    one, other = tmp_path / "one", tmp_path / "other"
    one.mkdir()
    other.mkdir()
    watchers = [WorkspaceWatcher([root], debounce_ms=10, grace_ms=LATE) for root in (one, other)]
    for watcher in watchers:
        await watcher.start()
    try:
        assert watcher_threads() == 2
        write(other / "there.txt")
        assert await drain_settled(watchers[1], other, 1) == ["there.txt"]
        assert watchers[0].pending == 0
    finally:
        for watcher in watchers:
            await watcher.aclose()
    await until(lambda: watcher_threads() == 0)


async def test_a_change_in_one_sessions_turn_is_the_user_s_to_the_other(tmp_path: Path) -> None:
    """As when each session had its own watcher: what another session's agent writes is,
    to this session, a change made outside its turns."""
    root = tmp_path / "ws"
    write(root / "shared.py", "old")
    in_turn = WorkspaceWatcher([root], debounce_ms=10, grace_ms=LATE)
    idle = WorkspaceWatcher([root], debounce_ms=10, grace_ms=LATE)
    await in_turn.start()
    await idle.start()
    try:
        in_turn.turn_started()
        write(root / "shared.py", "the agent's edit")
        assert await drain_settled(idle, root, 1) == ["shared.py"]
        in_turn.turn_finished()
        assert await drain_settled(in_turn, root, 0) == []
    finally:
        await in_turn.aclose()
        await idle.aclose()


async def test_a_workspace_that_writes_without_pause_still_reports_and_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The workspace is the attacker's: a process appending to a file as fast as it can must
    not hold the watcher in one endless batch, away from its sessions and its stop."""
    root = tmp_path / "ws"
    root.mkdir()
    caplog.set_level(logging.WARNING, logger="hermes_core.changes.watch")
    watcher = WorkspaceWatcher([root], debounce_ms=10, grace_ms=LATE)
    await watcher.start()
    writer = await asyncio.create_subprocess_exec(
        "sh", "-c", 'while :; do echo x >> "$1"; done', "sh", str(root / "flood.log")
    )
    try:
        await until(lambda: watcher.pending >= 1)
        await watcher.aclose()
        assert "did not stop" not in caplog.text
        await until(lambda: watcher_threads() == 0)
    finally:
        writer.kill()
        await writer.wait()
        await watcher.aclose()
