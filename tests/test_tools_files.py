"""read_file, write_file, patch and list_files against a real temp dir."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes_core.events import Event
from hermes_core.tools.base import SessionToolState, ToolContext, ToolLimits
from hermes_core.tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from hermes_core.tools.patch import PatchTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope


def make_ctx(
    root: Path,
    *,
    limits: ToolLimits | None = None,
    allow_outside: bool = False,
    max_read_bytes: int = 2_000_000,
) -> ToolContext:
    events: list[Event] = []
    workspace = LocalWorkspace(WorkspaceScope(root), max_read_bytes=max_read_bytes)
    return ToolContext(
        "call-1", workspace, SessionToolState(), events.append, limits or ToolLimits(), allow_outside
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


async def read(root: Path, ctx: ToolContext | None = None, **arguments: object):  # type: ignore[no-untyped-def]
    tool = ReadFileTool()
    return await tool.run(tool.parse(arguments), ctx or make_ctx(root))


# --- read_file ----------------------------------------------------------------------


async def test_read_numbers_lines(root: Path) -> None:
    (root / "app.py").write_text("import os\n\nprint(os.getcwd())\n")
    result = await read(root, path="app.py")
    assert result.ok
    assert result.text == "     1\timport os\n     2\t\n     3\tprint(os.getcwd())"


async def test_read_offset_limit_and_how_to_continue(root: Path) -> None:
    (root / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await read(root, path="n.txt", offset=10, limit=5)
    assert result.text.splitlines()[:5] == [f"{i:>6}\tline {i}" for i in range(10, 15)]
    assert "Showing lines 10-14 of 100" in result.text
    assert "offset=15" in result.text

    small = make_ctx(root, limits=ToolLimits(default_read_lines=30))
    result = await read(root, small, path="n.txt")
    assert "    30\tline 30" in result.text and "line 31" not in result.text
    assert "offset=31" in result.text

    tail = await read(root, path="n.txt", offset=98)
    assert tail.text == "    98\tline 98\n    99\tline 99\n   100\tline 100"

    past = await read(root, path="n.txt", offset=101)
    assert not past.ok and "past the end" in past.text and "100 lines" in past.text


async def test_read_cuts_long_lines(root: Path) -> None:
    (root / "min.js").write_text("x" * 5000 + "\nshort\n")
    ctx = make_ctx(root, limits=ToolLimits(max_line_chars=100))
    result = await read(root, ctx, path="min.js")
    first, second = result.text.splitlines()
    assert first == "     1\t" + "x" * 100 + " [… line cut, 4900 more characters]"
    assert second == "     2\tshort"


async def test_read_output_budget_stops_early_and_says_where(root: Path) -> None:
    (root / "wide.txt").write_text(("y" * 90 + "\n") * 50)
    ctx = make_ctx(root, limits=ToolLimits(max_output_chars=1000))
    result = await read(root, ctx, path="wide.txt")
    assert "Showing lines 1-10 of 50" in result.text and "offset=11" in result.text


async def test_read_binary_huge_missing_directory_and_empty(root: Path) -> None:
    (root / "logo.png").write_bytes(b"\x89PNG\0\0\0\rIHDR")
    (root / "big.txt").write_text("z" * 5000)
    (root / "empty.txt").write_text("")
    (root / "src").mkdir()
    ctx = make_ctx(root, max_read_bytes=1000)

    binary = await read(root, ctx, path="logo.png")
    assert not binary.ok and "binary file (12 bytes)" in binary.text and "\\x" not in binary.text
    huge = await read(root, ctx, path="big.txt")
    assert not huge.ok and "4.9 KB" in huge.text and "1000 bytes" in huge.text
    missing = await read(root, ctx, path="nope.py")
    assert not missing.ok and missing.text == "File not found: nope.py"
    directory = await read(root, ctx, path="src")
    assert not directory.ok and "is a directory" in directory.text and "list_files" in directory.text
    empty = await read(root, ctx, path="empty.txt")
    assert empty.ok and empty.text == "empty.txt is empty."


async def test_read_refuses_paths_outside_unless_allowed(root: Path) -> None:
    secret = root.parent / "secret.txt"
    secret.write_text("token\n")
    (root / "link.txt").symlink_to(secret)
    for path in ("../secret.txt", str(secret), "link.txt"):
        refused = await read(root, path=path)
        assert not refused.ok
        assert "outside the workspace" in refused.text and str(secret) in refused.text
        allowed = await read(root, make_ctx(root, allow_outside=True), path=path)
        assert allowed.ok and allowed.text == "     1\ttoken"


async def test_read_title_and_locations(root: Path) -> None:
    tool = ReadFileTool()
    ws = LocalWorkspace(WorkspaceScope(root))
    assert tool.title(tool.parse({"path": "src/app.py", "offset": 10, "limit": 41}), ws) == (
        "Read src/app.py (lines 10-50)"
    )
    assert tool.title(tool.parse({"path": "src/app.py"}), ws) == "Read src/app.py"
    [location] = tool.locations(tool.parse({"path": "src/app.py", "offset": 7}), ws)
    assert (location.path, location.line) == (str(root / "src" / "app.py"), 7)


# --- write_file ---------------------------------------------------------------------


async def test_write_new_file_has_no_old_text(root: Path) -> None:
    tool = WriteFileTool()
    result = await tool.run(tool.parse({"path": "pkg/mod.py", "content": "a = 1\nb = 2\n"}), make_ctx(root))
    assert result.ok
    assert (root / "pkg" / "mod.py").read_text() == "a = 1\nb = 2\n"
    assert result.text == "Created pkg/mod.py (2 lines)."
    assert result.diff is not None
    assert (result.diff.path, result.diff.old_text, result.diff.new_text) == (
        str(root / "pkg" / "mod.py"),
        None,
        "a = 1\nb = 2\n",
    )
    assert tool.title(tool.parse({"path": "pkg/mod.py", "content": ""}), make_ctx(root).workspace) == (
        "Write pkg/mod.py"
    )


async def test_overwrite_reports_a_diff(root: Path) -> None:
    (root / "conf.ini").write_text("[a]\nx = 1\ny = 2\n")
    tool = WriteFileTool()
    result = await tool.run(
        tool.parse({"path": "conf.ini", "content": "[a]\nx = 1\ny = 3\n"}), make_ctx(root)
    )
    assert result.ok
    assert result.diff is not None and result.diff.old_text == "[a]\nx = 1\ny = 2\n"
    assert "Overwrote conf.ini (3 lines; +1 -1)" in result.text
    assert "--- a/conf.ini" in result.text and "-y = 2\n+y = 3" in result.text


async def test_write_refuses_outside_and_directories(root: Path) -> None:
    tool = WriteFileTool()
    outside = await tool.run(tool.parse({"path": "../evil.txt", "content": "x"}), make_ctx(root))
    assert not outside.ok and "outside the workspace" in outside.text
    assert not (root.parent / "evil.txt").exists()
    (root / "dir").mkdir()
    directory = await tool.run(tool.parse({"path": "dir", "content": "x"}), make_ctx(root))
    assert not directory.ok and "is a directory" in directory.text


# --- patch --------------------------------------------------------------------------

SOURCE = """def greet(name):
    print("hi", name)


def main():
    greet("a")
    greet("b")
"""


async def patch(root: Path, **arguments: object):  # type: ignore[no-untyped-def]
    tool = PatchTool()
    return await tool.run(tool.parse(arguments), make_ctx(root))


async def test_patch_replaces_and_returns_a_diff(root: Path) -> None:
    (root / "app.py").write_text(SOURCE)
    result = await patch(root, path="app.py", old_text='print("hi", name)', new_text='print("hello", name)')
    assert result.ok
    assert (root / "app.py").read_text() == SOURCE.replace('"hi"', '"hello"')
    assert result.text.startswith("Edited app.py (1 replacement).")
    assert '-    print("hi", name)\n+    print("hello", name)' in result.text
    assert result.diff is not None
    assert result.diff.old_text == SOURCE and result.diff.new_text == (root / "app.py").read_text()


async def test_patch_missing_text(root: Path) -> None:
    (root / "app.py").write_text(SOURCE)
    result = await patch(root, path="app.py", old_text="def gret(nam):", new_text="x")
    assert not result.ok
    assert "old_text was not found in app.py" in result.text
    assert "1\tdef greet(name):" in result.text  # the closest line
    assert (root / "app.py").read_text() == SOURCE


async def test_patch_whitespace_difference_is_named(root: Path) -> None:
    (root / "app.py").write_text(SOURCE)
    result = await patch(root, path="app.py", old_text='def main():\n  greet("a")', new_text="x")
    assert not result.ok
    assert "matches lines 5-6 when whitespace is ignored" in result.text
    assert "indentation or whitespace differs" in result.text
    assert '     6\t    greet("a")' in result.text


async def test_patch_ambiguous_lists_line_numbers(root: Path) -> None:
    (root / "app.py").write_text(SOURCE)
    result = await patch(root, path="app.py", old_text="greet(", new_text="welcome(")
    assert not result.ok
    assert "occurs 3 times" in result.text and "lines 1, 6, 7" in result.text
    assert "replace_all" in result.text
    assert (root / "app.py").read_text() == SOURCE

    everywhere = await patch(root, path="app.py", old_text="greet(", new_text="welcome(", replace_all=True)
    assert everywhere.ok and "3 replacements" in everywhere.text
    assert (root / "app.py").read_text().count("welcome(") == 3


async def test_patch_rejects_empty_identical_and_missing_file(root: Path) -> None:
    (root / "app.py").write_text(SOURCE)
    empty = await patch(root, path="app.py", old_text="", new_text="x")
    assert not empty.ok and "old_text is empty" in empty.text
    same = await patch(root, path="app.py", old_text="main", new_text="main")
    assert not same.ok and "identical" in same.text
    missing = await patch(root, path="new.py", old_text="a", new_text="b")
    assert not missing.ok and "File not found: new.py" in missing.text and "write_file" in missing.text


async def test_patch_keeps_crlf_line_endings(root: Path) -> None:
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await patch(root, path="win.txt", old_text="one\ntwo", new_text="one\n2")
    assert result.ok
    assert (root / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


# --- list_files ---------------------------------------------------------------------


async def list_files(root: Path, ctx: ToolContext | None = None, **arguments: object):  # type: ignore[no-untyped-def]
    tool = ListFilesTool()
    return await tool.run(tool.parse(arguments), ctx or make_ctx(root))


@pytest.fixture
def repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/\n*.log\n")
    for name in (
        "src/app.py",
        "src/util/helpers.py",
        "README.md",
        "build/out.js",
        "debug.log",
        ".env.example",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    return root


async def test_list_files_honours_gitignore_and_skips_git(repo: Path) -> None:
    result = await list_files(repo)
    assert result.ok
    assert result.text.splitlines() == [
        ".env.example",
        ".gitignore",
        "README.md",
        "src/app.py",
        "src/util/helpers.py",
    ]


async def test_list_files_under_a_path_with_a_glob(repo: Path) -> None:
    result = await list_files(repo, path="src", glob="*.py")
    assert result.text.splitlines() == ["app.py", "util/helpers.py"]
    none = await list_files(repo, glob="*.rs")
    assert none.ok and none.text == "No files matching *.rs in .."


async def test_list_files_cap_says_how_many_more(repo: Path) -> None:
    for i in range(50):
        (repo / "many" / f"f{i:02}.txt").parent.mkdir(exist_ok=True)
        (repo / "many" / f"f{i:02}.txt").write_text("")
    ctx = make_ctx(repo, limits=ToolLimits(max_output_chars=100))
    result = await list_files(repo, ctx, path="many")
    lines = result.text.splitlines()
    assert lines[0] == "f00.txt"
    shown = len(lines) - 1
    assert f"[{50 - shown} more files not shown (50 in all)" in lines[-1]


async def test_list_files_errors(repo: Path) -> None:
    missing = await list_files(repo, path="nowhere")
    assert not missing.ok and missing.text == "Directory not found: nowhere"
    a_file = await list_files(repo, path="README.md")
    assert not a_file.ok and "read_file" in a_file.text
    outside = await list_files(repo, path="..")
    assert not outside.ok and "outside the workspace" in outside.text
