"""The after-command check's view of the repositories below a root (`repo_finder`): what the
kernel's watches report between checks, and what it falls back to."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes_core.sandbox import repo_finder


def init(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_a_repository_made_deep_after_the_first_check_is_found(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "node_modules" / "pkg" / "lib").mkdir(parents=True)
    assert repo_finder.repositories(str(root)) == []
    init(root / "node_modules" / "pkg" / "lib" / "a" / "b" / "c")
    assert repo_finder.repositories(str(root)) == [str(root / "node_modules/pkg/lib/a/b/c")]


def test_a_folder_moved_in_with_a_repository_inside_is_found(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    assert repo_finder.repositories(str(root)) == []
    init(tmp_path / "outside" / "x" / "y")
    (tmp_path / "outside").rename(root / "src" / "moved")
    assert repo_finder.repositories(str(root)) == [str(root / "src/moved/x/y")]


def test_a_root_no_longer_watched_is_walked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repo_finder, "MAX_ROOTS", 1)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    assert repo_finder.repositories(str(first)) == []
    assert repo_finder.repositories(str(second)) == []  # `first` is closed
    init(first / "a" / "b" / "c" / "d")  # no watch saw it
    assert repo_finder.repositories(str(first)) == [str(first / "a/b/c/d")]


def test_without_watches_the_bounded_walk_still_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repo_finder, "MAX_WATCHES", 0)
    root = tmp_path / "root"
    init(root / "a" / "b")
    init(root / "a" / "b" / "c" / "d" / "e")  # deeper than the bounded walk looks
    assert repo_finder.repositories(str(root)) == [str(root / "a/b")]


def test_nested_editor_folders_and_bare_layouts_are_reported_by_name(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    assert repo_finder.holding(str(root), ".zed") == []
    (root / "pkg" / "api" / ".zed").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(root / "docs")], check=True)
    assert repo_finder.holding(str(root), ".zed") == [str(root / "pkg/api")]
    assert str(root / "docs") in repo_finder.holding(str(root), "HEAD")
