"""Which caches a command line may write (`cache_needs`): a doubt means every cache, since a
cache left read-only for a command that wanted it fails that command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes_core.sandbox.cache_needs import cache_need

EVERY = None
NONE: frozenset[str] = frozenset()
PIP = frozenset({"~/.cache"})
CARGO = frozenset({"~/.cargo/registry", "~/.cargo/git"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    return tmp_path / "repo"


def need(line: str, repo: Path, path: str | None = None) -> frozenset[str] | None:
    search = path or os.environ.get("PATH", "/usr/bin:/bin")
    return cache_need(line, cwd=repo, home=repo.parent, search_path=search, workspace=[repo])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("true", NONE),
        ("ls -la | grep x && cat a.txt > b.txt", NONE),
        ("bash -c 'rg foo | head -3'", NONE),
        ("find . -name '*.pyc' -exec rm {} +", NONE),
        ("git add -A && git -c user.name=a commit -qm x && git log --oneline", NONE),  # no hook
        ("timeout 60 pip install -r requirements.txt", PIP),
        ("python3 -m pip install -e .", PIP),
        ("cargo build --offline && ls target", CARGO),
        ("echo $(pip --version)", PIP),
        ("npm test", EVERY),  # the project's own script
        ("yarn build", EVERY),
        ("cargo run", EVERY),
        ("make", EVERY),
        ("./build.sh", EVERY),
        ("sh setup.sh", EVERY),
        ("python3 x.py", EVERY),
        ('sh -c "$SETUP"', EVERY),
        ("$TOOL install", EVERY),
        ("sudo ls", EVERY),
        ("find . -exec sh x.sh \\;", EVERY),
        ("git -c core.fsmonitor=./x status", EVERY),
        ("git -C ../other commit -m x", EVERY),
        ("git push", EVERY),
        ("git st", EVERY),  # an alias: anything
        ("cd sub && git commit -m x", EVERY),  # another repository's hooks
        ("echo 'unclosed", EVERY),
        ("PATH=./bin:$PATH ls", EVERY),  # which `ls` runs is the line's to say
        ("export PATH=node_modules/.bin:$PATH && npm install", EVERY),
        ("LD_PRELOAD=./hook.so cat x", EVERY),
    ],
)
def test_what_a_command_line_may_write(line: str, expected: frozenset[str] | None, repo: Path) -> None:
    assert need(line, repo) == expected


def test_a_git_hook_or_a_hooks_path_makes_a_commit_get_every_cache(repo: Path) -> None:
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\npre-commit run\n")
    assert need("git commit -m x", repo) is EVERY
    assert need("git status", repo) == NONE  # runs no hook
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    assert need("git commit -m x", repo) == NONE
    with (repo / ".git" / "config").open("a") as config:
        config.write("[core]\n\thooksPath = .husky\n")
    assert need("git commit -m x", repo) is EVERY


def test_a_known_name_found_in_the_workspace_is_the_workspaces_code(repo: Path) -> None:
    tools = repo / "node_modules" / ".bin"
    tools.mkdir(parents=True)
    (tools / "ls").write_text("#!/bin/sh\nnpm install\n")
    (tools / "ls").chmod(0o755)
    assert need("ls", repo, path=f"{tools}{os.pathsep}/usr/bin:/bin") is EVERY
    assert need("ls", repo, path=f"node_modules/.bin{os.pathsep}/usr/bin:/bin") is EVERY  # relative
    assert need("ls", repo) == NONE
