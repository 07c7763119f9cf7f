"""WorkspaceWatcher: which files the user changed between turns, on real directories."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from watchfiles import Change

import hermes_core.changes.watch
from hermes_core.changes.watch import WorkspaceWatcher
from hermes_core.loop.turn_context import turn_preamble

DEADLINE = 30.0  # seconds: only a hang gets that far
CLOCK_TICK = 0.03  # file timestamps lag the wall clock by up to a kernel tick
LATE = 60_000  # ms: a grace window no event outlasts


_sentinels = itertools.count(1)


def write(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def until(condition: Callable[[], bool], deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "timed out waiting for the watcher"
        await asyncio.sleep(0.01)


async def drain_settled(watcher: WorkspaceWatcher, root: Path, paths: int) -> list[str]:
    """One drain, once the watcher holds `paths` changed paths (directories count) and every
    event of the writes before has landed: a file moved into `root` after them (one event;
    inotify keeps their order) is taken in last. It is left out of the answer."""
    await until(lambda: watcher.pending >= paths)
    sentinel = f"zz_settled_{next(_sentinels)}"
    (root.parent / sentinel).write_text("")
    (root.parent / sentinel).rename(root / sentinel)
    await until(lambda: watcher.pending >= paths + 1)
    return [path for path in watcher.drain() if path != sentinel]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root / "src" / "edit_me.py", "old")
    write(root / "src" / "remove_me.py", "old")
    write(root / "README.md", "hello")
    return root


@pytest.fixture
async def watcher(workspace: Path) -> AsyncIterator[WorkspaceWatcher]:
    # A grace window longer than any test: however late an event lands, its file's
    # timestamp decides whose it is, not when a loaded machine got round to it.
    w = WorkspaceWatcher([workspace], debounce_ms=10, grace_ms=LATE)
    await w.start()
    assert w.watching
    yield w
    await w.aclose()


async def test_user_changes_between_turns_are_reported_once(
    watcher: WorkspaceWatcher, workspace: Path
) -> None:
    watcher.turn_started()
    watcher.turn_finished()
    await asyncio.sleep(CLOCK_TICK)
    write(workspace / "src" / "edit_me.py", "new")
    write(workspace / "src" / "pkg" / "created.py")  # in a directory that did not exist
    (workspace / "src" / "remove_me.py").unlink()
    write(workspace / "zz_marker.txt")

    changed = await drain_settled(watcher, workspace, 5)  # with the new directory src/pkg

    assert changed == ["src/edit_me.py", "src/pkg/created.py", "src/remove_me.py (deleted)", "zz_marker.txt"]
    await asyncio.sleep(0.1)
    assert watcher.drain() == []
    preamble = turn_preamble(changed, None)
    assert preamble is not None and "- src/remove_me.py (deleted)" in preamble


async def test_agent_changes_during_a_turn_are_not_reported(
    watcher: WorkspaceWatcher, workspace: Path
) -> None:
    watcher.turn_started()
    await asyncio.sleep(CLOCK_TICK)
    write(workspace / "src" / "edit_me.py", "agent edit")
    write(workspace / "generated" / "out.txt")
    (workspace / "src" / "remove_me.py").unlink()
    watcher.turn_finished()
    await asyncio.sleep(CLOCK_TICK)
    write(workspace / "zz_marker.txt")

    assert await drain_settled(watcher, workspace, 1) == ["zz_marker.txt"]


async def test_events_landing_just_after_the_turn_are_still_the_agents(workspace: Path) -> None:
    # A long debounce makes sure the agent's last writes are reported after turn_finished.
    watcher = WorkspaceWatcher([workspace], debounce_ms=150, grace_ms=LATE)
    await watcher.start()
    try:
        watcher.turn_started()
        await asyncio.sleep(CLOCK_TICK)
        write(workspace / "src" / "edit_me.py", "agent's last command")
        (workspace / "src" / "remove_me.py").unlink()
        watcher.turn_finished()
        await asyncio.sleep(CLOCK_TICK)
        # ...while the user's save right after the turn still counts.
        write(workspace / "README.md", "user edit")

        assert await drain_settled(watcher, workspace, 1) == ["README.md"]
    finally:
        await watcher.aclose()


async def test_a_save_just_before_the_turn_started_is_not_lost(workspace: Path) -> None:
    watcher = WorkspaceWatcher([workspace], debounce_ms=150, grace_ms=LATE)
    await watcher.start()
    try:
        # The event must land after turn_started. The watcher's threads hand it over only
        # after two turns at the GIL a notifier step apart, so this test keeps the GIL (a
        # long switch interval, a busy wait for the clock tick) until the turn has started.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(60)
        try:
            write(workspace / "README.md", "saved as the prompt was sent")
            ticked = time.monotonic() + CLOCK_TICK
            while time.monotonic() < ticked:
                pass
            assert watcher.drain() == []  # its event has not arrived yet
            watcher.turn_started()
        finally:
            sys.setswitchinterval(interval)
        await until(lambda: watcher.pending == 1)
        watcher.turn_finished()

        assert watcher.drain() == ["README.md"]
    finally:
        await watcher.aclose()


async def test_ignored_directories_and_editor_droppings_are_not_reported(
    watcher: WorkspaceWatcher, workspace: Path
) -> None:
    write(workspace / "node_modules" / "left-pad" / "index.js")
    write(workspace / ".git" / "HEAD", "ref: refs/heads/main")
    write(workspace / "src" / "__pycache__" / "edit_me.cpython-311.pyc")
    write(workspace / "build" / "lib" / "out.py")
    write(workspace / "src" / ".edit_me.py.swp")
    write(workspace / "src" / "edit_me.py~")
    write(workspace / ".vscode" / "settings.json", "{}")  # the user's settings do count
    write(workspace / "zz_marker.txt")

    changed = await drain_settled(watcher, workspace, 3)  # with the new directory .vscode

    assert changed == [".vscode/settings.json", "zz_marker.txt"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write(root / ".gitignore", "*.log\nout/\ncoverage/\n")
    write(root / "coverage" / "old.txt")  # ignored before the watch starts: not even watched
    return root


async def test_gitignored_files_are_not_reported(repo: Path) -> None:
    root = repo
    watcher = WorkspaceWatcher([root], debounce_ms=10)
    await watcher.start()
    try:
        write(root / "app.log")
        write(root / "out" / "bundle.js")  # a new ignored directory
        write(root / "coverage" / "index.html")
        write(root / "main.py")

        assert await drain_settled(watcher, root, 1) == ["main.py"]
    finally:
        await watcher.aclose()


async def test_a_folder_the_repository_ignores_is_still_watched_when_opened(repo: Path) -> None:
    root = repo / "coverage"
    watcher = WorkspaceWatcher([root], debounce_ms=10)
    await watcher.start()
    try:
        write(root / "index.html")
        assert await drain_settled(watcher, root, 1) == ["index.html"]
    finally:
        await watcher.aclose()


async def test_ignored_directories_hold_no_kernel_watch(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The inotify budget is per user and the editor needs it too (macOS and Windows
    # watch recursively instead; the directory choice is the same code there).
    monkeypatch.setattr(hermes_core.changes.watch, "_RECURSIVE_IS_CHEAP", False)
    for i in range(20):
        (repo / "node_modules" / f"pkg{i}" / "lib").mkdir(parents=True)
        (repo / "coverage" / f"run{i}").mkdir(parents=True)  # ignored by .gitignore
    (repo / "src" / "app").mkdir(parents=True)
    watcher = WorkspaceWatcher([repo], debounce_ms=10)
    await watcher.start()
    try:
        # The root, src, src/app; not .git, node_modules or coverage.
        assert watcher.watched_directories == 3
        write(repo / "src" / "app" / "main.py")
        assert await drain_settled(watcher, repo, 1) == ["src/app/main.py"]
    finally:
        await watcher.aclose()
    assert watcher.watched_directories == 0


async def test_a_workspace_inside_a_directory_named_like_an_ignored_one(tmp_path: Path) -> None:
    root = tmp_path / "build" / "project"
    root.mkdir(parents=True)
    watcher = WorkspaceWatcher([root], debounce_ms=10)
    await watcher.start()
    try:
        write(root / "main.py")
        assert await drain_settled(watcher, root, 1) == ["main.py"]
    finally:
        await watcher.aclose()


async def test_renames_and_files_that_came_and_went(watcher: WorkspaceWatcher, workspace: Path) -> None:
    (workspace / "src" / "edit_me.py").rename(workspace / "src" / "renamed.py")
    write(workspace / "scratch.tmp")
    (workspace / "scratch.tmp").unlink()
    write(workspace / "zz_marker.txt")

    changed = await drain_settled(watcher, workspace, 4)

    assert changed == ["src/edit_me.py (deleted)", "src/renamed.py", "zz_marker.txt"]

    shutil.rmtree(workspace / "src")  # one line for the directory, not one per file
    write(workspace / "zz_marker2.txt")

    changed = await drain_settled(watcher, workspace, 4)  # src, its two files, the marker

    assert changed == ["src/ (deleted)", "zz_marker2.txt"]


async def test_paths_outside_the_first_root_are_absolute(tmp_path: Path, workspace: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    watcher = WorkspaceWatcher([workspace, other], debounce_ms=10)
    await watcher.start()
    try:
        write(other / "lib.py")
        write(workspace / "zz_marker.txt")
        changed = await drain_settled(watcher, workspace, 2)
        assert changed == sorted([str((other / "lib.py").resolve()), "zz_marker.txt"])
    finally:
        await watcher.aclose()


async def test_a_long_list_is_capped_with_a_count(workspace: Path) -> None:
    watcher = WorkspaceWatcher([workspace], debounce_ms=10, max_entries=5)
    await watcher.start()
    try:
        for i in range(30):
            write(workspace / "many" / f"f{i:02}.txt")
        await until(lambda: watcher.pending >= 31)  # 30 files and their directory

        changed = watcher.drain()

        assert changed == [
            "many/f00.txt",
            "many/f01.txt",
            "many/f02.txt",
            "many/f03.txt",
            "… and 26 more",
        ]
        assert watcher.drain() == []
    finally:
        await watcher.aclose()


async def test_aclose_stops_promptly_and_twice_is_fine(
    watcher: WorkspaceWatcher, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hermes_core.changes.watch")
    await watcher.aclose()
    # Stopped, not given up on: aclose waits a bounded time for the thread, then warns.
    assert "did not stop" not in caplog.text
    await until(lambda: not [t for t in threading.enumerate() if t.name == "hermes-workspace-watcher"])
    assert not watcher.watching
    await watcher.aclose()

    write(workspace / "after_close.txt")
    await asyncio.sleep(0.1)
    assert watcher.drain() == []


async def test_a_missing_root_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hermes_core.changes.watch")
    watcher = WorkspaceWatcher([tmp_path / "does-not-exist"], debounce_ms=10)

    await watcher.start()
    watcher.turn_started()
    watcher.turn_finished()

    assert not watcher.watching
    assert watcher.drain() == []
    assert "does-not-exist" in caplog.text
    await watcher.aclose()


async def test_a_missing_root_next_to_a_real_one_still_watches_the_real_one(
    tmp_path: Path, workspace: Path
) -> None:
    watcher = WorkspaceWatcher([workspace, tmp_path / "gone"], debounce_ms=10)
    await watcher.start()
    try:
        write(workspace / "main.py")
        assert await drain_settled(watcher, workspace, 1) == ["main.py"]
    finally:
        await watcher.aclose()


async def test_a_tree_too_large_to_watch_degrades_to_nothing(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # macOS and Windows watch the roots recursively and have no directory budget.
    monkeypatch.setattr(hermes_core.changes.watch, "_RECURSIVE_IS_CHEAP", False)
    monkeypatch.setattr(hermes_core.changes.watch, "MAX_WATCHED_DIRS", 3)
    for i in range(5):
        (workspace / f"d{i}").mkdir()
    caplog.set_level(logging.WARNING, logger="hermes_core.changes.watch")
    watcher = WorkspaceWatcher([workspace], debounce_ms=10)

    await watcher.start()

    assert not watcher.watching
    assert "directories to watch" in caplog.text
    write(workspace / "main.py")
    await asyncio.sleep(0.1)
    assert watcher.drain() == []
    await watcher.aclose()


def test_no_stdout(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    async def main() -> None:
        w = WorkspaceWatcher([tmp_path, tmp_path / "missing"], debounce_ms=10)
        await w.start()
        write(tmp_path / "a.txt")
        await asyncio.sleep(0.05)
        w.drain()
        await w.aclose()

    asyncio.run(main())
    assert capfd.readouterr().out == ""
    assert os.listdir(tmp_path) == ["a.txt"]  # the watcher writes nothing into the workspace


async def test_a_batch_handled_late_after_a_boundary_goes_by_the_files_change_time(workspace: Path) -> None:
    """A starved watcher thread (a loaded machine) may handle a batch long after the turn
    boundary it straddles: the user's save before the turn must still be the user's."""
    watcher = WorkspaceWatcher([workspace], debounce_ms=1, grace_ms=0)
    batch_began = time.monotonic()
    write(workspace / "README.md", "saved before the prompt")
    await asyncio.sleep(3 * CLOCK_TICK)  # the turn starts clearly after the save
    watcher.turn_started()
    await asyncio.sleep(3 * CLOCK_TICK)  # and the batch is handled well past the grace period

    watcher._attribute({str(workspace / "README.md"): {Change.modified}}, batch_began)

    assert watcher.drain() == [str(workspace / "README.md")]
