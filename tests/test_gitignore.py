"""hermes_core.fence.gitignore reads .gitignore as git does: every path of a tree with the tricky cases
(negation, anchoring, `**`, nested files, info/exclude, tracked files, every index version)
gets the answer `git check-ignore` gives. The test runs git; the agent never does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes_core.fence.gitignore import Repository, index_paths

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    **{
        f"GIT_{who}_{what}": value
        for who in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "t"), ("EMAIL", "t@t"))
    },
}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, env=GIT_ENV)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    files = {
        ".gitignore": "*.log\n!keep.log\nout/\n/rootonly\ndocs/**/gen\nbuild\n\\#hash\n# comment\n",
        "sub/.gitignore": "!*.log\nlocal.txt\n/anchored\n",
        "sub/deep/.gitignore": "!out/\n",
        ".git/info/exclude": "secret*\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    names = (
        "a.log keep.log sub/b.log sub/local.txt sub/anchored sub/deep/anchored out/f rootonly "
        "sub/rootonly docs/a/b/gen/f docs/gen x/build/f secret1 tracked.log sub/out/z sub/deep/out/y "
        "#hash plain.txt sub/deep/x.log build.txt"
    )
    for name in names.split():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    git(root, "add", "-f", "tracked.log", "plain.txt", "out/f")
    return root


def all_paths(root: Path) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = []
    for directory, dirs, files in os.walk(root):
        if ".git" in dirs:
            dirs.remove(".git")
        found += [(os.path.join(directory, d), True) for d in dirs]
        found += [(os.path.join(directory, f), False) for f in files]
    return found


@pytest.mark.parametrize("index_version", ["2", "3", "4"])
def test_every_path_is_ignored_exactly_when_git_says_so(repo: Path, index_version: str) -> None:
    git(repo, "update-index", "--index-version", index_version)
    if index_version == "3":
        git(repo, "update-index", "--skip-worktree", "plain.txt")  # an entry with extended flags
    paths = all_paths(repo)
    answer = git(repo, "check-ignore", "-z", "--stdin", stdin=b"".join(p.encode() + b"\0" for p, _ in paths))
    by_git = {p for p in answer.decode().split("\0") if p}
    repository = Repository.around(str(repo / "sub" / "deep"))
    assert repository is not None and repository.top == str(repo)
    ours = {p for p, is_dir in paths if repository.ignored(p, is_dir=is_dir)}
    assert ours == by_git
    assert len(by_git) > 10  # the tree does exercise the rules


def test_the_index_lists_what_git_tracks(repo: Path) -> None:
    for version in ("2", "3", "4"):
        git(repo, "update-index", "--index-version", version)
        tracked = git(repo, "ls-files", "-z").decode().split("\0")
        assert index_paths((repo / ".git" / "index").read_bytes()) == [p for p in tracked if p]


def test_an_edited_gitignore_is_read_again(repo: Path) -> None:
    repository = Repository.around(str(repo))
    assert repository is not None
    assert not repository.ignored(str(repo / "plain2.txt"), is_dir=False)
    (repo / ".gitignore").write_text("plain2.txt\n")
    assert repository.ignored(str(repo / "plain2.txt"), is_dir=False)


def test_a_linked_worktree_reads_the_shared_exclude_file(repo: Path, tmp_path: Path) -> None:
    git(repo, "commit", "-q", "-m", "start")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    (linked / "secret9").write_text("x\n")
    repository = Repository.around(str(linked))
    assert repository is not None and repository.top == str(linked)
    assert repository.ignored(str(linked / "secret9"), is_dir=False)  # .git/info/exclude of the main one
    assert not repository.ignored(str(linked / "plain.txt"), is_dir=False)


def test_a_fifo_or_a_device_in_place_of_git_files_reads_as_empty(tmp_path: Path) -> None:
    # The workspace names these files: a FIFO must not block the watcher, nor /dev/zero
    # fill its memory.
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    (root / "sub").mkdir()
    os.mkfifo(root / ".gitignore")
    os.mkfifo(root / ".git" / "info" / "exclude")
    os.symlink("/dev/zero", root / ".git" / "index")
    (root / "sub" / ".gitignore").write_text("*.log\n")
    repository = Repository.around(str(root / "sub"))
    assert repository is not None
    assert repository.ignored(str(root / "sub" / "a.log"), is_dir=False)
    assert not repository.ignored(str(root / "sub" / "a.txt"), is_dir=False)


GLOBS = (
    "a*b*c\n*x*y\nq?r\n[!m]n.txt\n[^m]o.txt\n[]]z\n\\*star\n**/deep/**/leaf\nlong/**\n"
    "trail \nesc\\ \nk/*/v\n/top*/mid?\n*.[ch]\nna[a-c]*e/\n!nabe\nx**y\nun[closed\n"
    "[z-a]q\nstars/***/deep\ndslash//\n"
)
GLOB_NAMES = (
    "abc axxbyyc acb xy zxzy qqr qr an.txt mn.txt bo.txt mo.txt ]z star *star deep/leaf "
    "p/deep/q/r/leaf deep/x/leaf long/in/side long2/f trail esc k/1/v k/1/2/v top9/mid7 "
    "top9/mid top/midz f.c f.h f.o nabe/f nace/f nbe/f xy x_y xzzy un[closed unc zq stars/s/t/deep dslash/f"
)


def test_globs_match_as_git_matches_them(tmp_path: Path) -> None:
    # Stars in the middle of a name, classes, escapes, `**` in every place, a trailing
    # space, an unclosed bracket: each path gets git's answer.
    root = tmp_path / "globs"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text(GLOBS)
    for name in [*GLOB_NAMES.split(), "esc "]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    paths = all_paths(root)
    answer = git(root, "check-ignore", "-z", "--stdin", stdin=b"".join(p.encode() + b"\0" for p, _ in paths))
    by_git = {p for p in answer.decode().split("\0") if p}
    repository = Repository.around(str(root))
    assert repository is not None
    assert {p for p, is_dir in paths if repository.ignored(p, is_dir=is_dir)} == by_git
    assert len(by_git) > 15


def test_a_backtracking_pattern_costs_no_more_than_a_plain_one(tmp_path: Path) -> None:
    # `a*a*…b` against a long name of `a`s: a backtracking regex takes hours (and holds the
    # GIL, freezing the server); matched segment by segment it answers at once. git agrees.
    root = tmp_path / "hostile"
    name = "a" * 60
    (root / name / name).mkdir(parents=True)
    git(root, "init", "-q")
    (root / ".gitignore").write_text("a*" * 30 + "b\n" + "a*" * 30 + "\n")
    repository = Repository.around(str(root))
    assert repository is not None
    assert repository.ignored(str(root / name), is_dir=True)
    assert not repository.ignored(str(root / ("a" * 20)), is_dir=False)  # fewer than 30 `a`s
    answer = git(root, "check-ignore", "-z", "--stdin", stdin=f"{root / name}\0".encode())
    assert answer.decode().strip("\0") == str(root / name)
