"""Opening beneath a root: openat2 and the O_NOFOLLOW walk give the same answers, and the
workspace's opener built on them refuses links out, hard links and non-regular files."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.fence import beneath
from hermes_core.fence.beneath import LeavesRoot, open_beneath
from hermes_core.tools.base import SessionToolState, ToolContext, ToolLimits
from hermes_core.tools.search import SearchTool
from hermes_core.workspace import LocalWorkspace, NotRegularFile, OutsideWorkspace, WorkspaceScope


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test runs with the kernel's openat2 and with the component-wise walk."""
    if request.param == "openat2" and not beneath.use_openat2:
        pytest.fail("openat2 is unavailable on this machine; the first resolver is not tested")
    monkeypatch.setattr(beneath, "use_openat2", request.param == "openat2")
    yield request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ with files, links that stay and links that leave; secret.txt beside it."""
    root = tmp_path / "root"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "deep" / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("SECRET\n")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "b.txt").write_text("SECRET in a dir\n")
    (root / "rel-in").symlink_to("src/deep/a.txt")
    (root / "abs-in").symlink_to(root / "src" / "deep" / "a.txt")
    (root / "src" / "up-in").symlink_to("../src/deep")
    (root / "rel-out").symlink_to("../secret.txt")
    (root / "abs-out").symlink_to(tmp_path / "secret.txt")
    (root / "dir-out").symlink_to(tmp_path / "outdir")
    (root / "loop").symlink_to("loop")
    return root


def read(root: Path, relative: str) -> str:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = open_beneath(root_fd, str(root), relative, os.O_RDONLY)
    finally:
        os.close(root_fd)
    with os.fdopen(fd) as handle:
        return handle.read()


@pytest.mark.parametrize(
    "relative", ["src/deep/a.txt", "rel-in", "abs-in", "src/up-in/a.txt", "src/deep/../deep/./a.txt"]
)
def test_paths_and_links_that_stay_inside_open(resolver: str, tree: Path, relative: str) -> None:
    assert read(tree, relative) == "inside\n"


@pytest.mark.parametrize(
    "relative", ["rel-out", "abs-out", "dir-out/b.txt", "../secret.txt", "src/../../secret.txt"]
)
def test_paths_and_links_that_leave_are_refused(resolver: str, tree: Path, relative: str) -> None:
    with pytest.raises(LeavesRoot):
        read(tree, relative)


def test_a_symlink_loop_is_an_error_not_a_hang(resolver: str, tree: Path) -> None:
    with pytest.raises(OSError) as caught:
        read(tree, "loop")
    assert caught.value.errno == errno.ELOOP


# -- the workspace's opener ---------------------------------------------------------------------


def test_a_fifo_is_refused_at_once(resolver: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(NotRegularFile, match="FIFO"):
        WorkspaceScope(tmp_path).open_file("pipe")  # no writer: a blocking open would never return


def test_a_hard_link_to_a_file_elsewhere_is_refused(resolver: str, tree: Path) -> None:
    os.link(tree.parent / "secret.txt", tree / "hard.txt")
    with pytest.raises(OutsideWorkspace, match="hard link"):
        WorkspaceScope(tree).open_file("hard.txt")


def test_a_link_into_another_root_opens_beneath_that_root(resolver: str, tree: Path) -> None:
    scope = WorkspaceScope(tree, (tree.parent / "outdir",))
    assert scope.read_bytes("dir-out/b.txt", 100) == b"SECRET in a dir\n"
    with pytest.raises(OutsideWorkspace):
        scope.read_bytes("abs-out", 100)


def test_write_through_a_link_that_stays_writes_its_target_and_keeps_the_link(
    resolver: str, tree: Path
) -> None:
    os.chmod(tree / "src" / "deep" / "a.txt", 0o640)
    WorkspaceScope(tree).write_bytes("rel-in", b"new\n")
    assert (tree / "rel-in").is_symlink()
    assert (tree / "src" / "deep" / "a.txt").read_text() == "new\n"
    assert stat.S_IMODE((tree / "src" / "deep" / "a.txt").stat().st_mode) == 0o640


@pytest.mark.parametrize("name", ["rel-out", "abs-out", "dir-out/b.txt", "dir-out/new.txt"])
def test_write_through_a_link_that_leaves_is_refused_and_writes_nothing(
    resolver: str, tree: Path, name: str
) -> None:
    with pytest.raises(OutsideWorkspace):
        WorkspaceScope(tree).write_bytes(name, b"overwritten\n")
    assert (tree.parent / "secret.txt").read_text() == "SECRET\n"
    assert sorted(p.name for p in (tree.parent / "outdir").iterdir()) == ["b.txt"]
    assert not [p for p in tree.rglob(".*.tmp")]  # no temporary file left behind


def test_write_makes_missing_directories_beneath(resolver: str, tree: Path) -> None:
    WorkspaceScope(tree).write_bytes("new/sub/c.txt", b"c\n")
    assert (tree / "new" / "sub" / "c.txt").read_text() == "c\n"


def test_write_over_a_fifo_is_refused_without_blocking(resolver: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(NotRegularFile):
        WorkspaceScope(tmp_path).write_bytes("pipe", b"x")
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)


# -- search: ripgrep neither follows links out nor reads FIFOs ---------------------------------


async def test_search_follows_no_link_out_and_reads_no_fifo(resolver: str, tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    (tree / "plain.txt").write_text("SECRET, but the workspace's own\n")
    ctx = ToolContext(
        "c", LocalWorkspace(WorkspaceScope(tree)), SessionToolState(), lambda _: None, ToolLimits()
    )
    tool = SearchTool()
    everywhere = await tool.run(tool.parse({"pattern": "SECRET"}), ctx)
    assert everywhere.text.splitlines() == [
        "1 matches in 1 files",
        "plain.txt:1: SECRET, but the workspace's own",
    ]
    named = await tool.run(tool.parse({"pattern": "SECRET", "path": "pipe"}), ctx)
    assert not named.ok and "FIFO" in named.text  # rg would block reading it
    inside = await tool.run(tool.parse({"pattern": "inside", "path": "src/deep/a.txt"}), ctx)
    assert inside.text.splitlines()[1:] == ["src/deep/a.txt:1: inside"]
    below = await tool.run(tool.parse({"pattern": "inside", "path": "src"}), ctx)
    assert below.text.splitlines()[1:] == ["src/deep/a.txt:1: inside"]
