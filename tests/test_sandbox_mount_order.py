"""A cheaper launch that means the same (issue 19, "sandbox cost per command < 20 ms"):
bwrap parses the whole mount table for every bind, so binds come before the overlays they
are unrelated to, and git's and the editors' read-only folders are read-only overlays of
themselves instead of binds, without anything a command sees changing."""

from __future__ import annotations

import itertools
import os
import stat
import subprocess
from pathlib import Path

from hermes_core.sandbox.bwrap_args import Step, binds_first
from hermes_core.sandbox.overlay_views import viewable
from tests.test_sandbox_fence import GIT_ID, home, repo, run, sandboxed

__all__ = ["home", "repo"]  # the fixtures, shared with test_sandbox_fence


def _order(steps: list[Step]) -> list[str]:
    return [step.args[-1] for step in binds_first(steps)]


def _overlay(target: str) -> Step:
    return Step(Path(target), ["--overlay-src", "/x", "--overlay-src", "/y", "--ro-overlay", target])


def _bind(target: str, source: str | None = None) -> Step:
    return Step(Path(target), ["--ro-bind", source or target, target])


def test_binds_move_ahead_of_unrelated_overlays_only() -> None:
    steps = [
        _overlay("/h/.cache"),
        _overlay("/h/.ssh"),
        _bind("/h/.netrc", "/dev/null"),
        _bind("/h/.cache/huggingface/token", "/dev/null"),  # inside the overlay: after it
        _overlay("/h/p/.vscode"),
        _bind("/h/p/.env", "/dev/null"),
    ]
    order = _order(steps)
    assert order.index("/h/.netrc") < order.index("/h/.cache")
    assert order.index("/h/p/.env") < order.index("/h/.ssh")
    assert order.index("/h/.cache") < order.index("/h/.cache/huggingface/token")
    assert sorted(order) == sorted(step.args[-1] for step in steps)


def test_a_mount_over_a_place_keeps_its_place_after_what_it_covers() -> None:
    # The other way round too: an overlay over a folder a bind sits in must stay after it,
    # or the bind would be mounted beneath it and covered.
    steps = [_bind("/h/p/.git/config"), _overlay("/h/p/.git"), _bind("/h/q")]
    assert _order(steps) == ["/h/p/.git/config", "/h/q", "/h/p/.git"]
    # "/" holds everything: nothing moves across it
    steps = [_overlay("/o"), Step(Path("/"), ["--remount-ro", "/"]), _bind("/b")]
    assert _order(steps) == ["/o", "/", "/b"]


def test_a_real_launch_mounts_each_bind_after_the_mounts_above_it(repo: Path, home: Path) -> None:
    (home / ".cache" / "huggingface").mkdir()
    (home / ".cache" / "huggingface" / "token").write_text("hf_secret\n")
    (home / ".netrc").write_text("machine x password y\n")
    (repo / ".vscode").mkdir()
    _, sandbox = sandboxed(repo, home)
    argv = sandbox.wrap(["/bin/true"], cwd=repo)
    sandbox.after_command()
    mounted: list[str] = []  # targets in launch order
    for index, option in enumerate(argv):
        if option in ("--bind", "--ro-bind"):
            mounted.append(argv[index + 2])
        elif option in ("--ro-overlay", "--tmpfs"):
            mounted.append(argv[index + 1])
        elif option == "--overlay":
            mounted.append(argv[index + 3])
    for later, target in enumerate(mounted):
        for earlier in mounted[later + 1 :]:  # nothing mounted afterwards on a folder holding it
            assert not target.startswith(earlier.rstrip("/") + "/"), (target, earlier)


async def test_gits_and_the_editors_folders_are_read_only_views_showing_their_content(
    repo: Path, home: Path
) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho hook-ran\n")
    hook.chmod(0o755)
    (repo / ".vscode").mkdir()
    (repo / ".vscode" / "settings.json").write_text('{"x": 1}\n')
    ws, sandbox = sandboxed(repo, home)
    argv = sandbox.wrap(["/bin/true"], cwd=repo)
    sandbox.after_command()
    pairs = list(itertools.pairwise(argv))
    for folder in (repo / ".git" / "hooks", repo / ".git" / "info", repo / ".vscode"):
        assert ("--ro-overlay", str(folder)) in pairs and ("--ro-bind", str(folder)) not in pairs, folder
    _, out = await run(
        ws,
        f"cat .vscode/settings.json && ls .git/info && echo x >> notes && git add notes && "
        f"git {GIT_ID} commit -qm two && stat -c %a .git/hooks && echo commits $(git log --oneline | wc -l); "
        "echo evil > .git/hooks/pre-commit; echo evil > .vscode/settings.json",
        home,
    )
    assert '{"x": 1}' in out and "exclude" in out and "hook-ran" in out, out
    mode = oct(os.stat(repo / ".git" / "hooks").st_mode & 0o777)[2:]
    assert f"\n{mode}\n" in f"\n{out}", out  # the folder's own mode, not the empty layer's
    assert out.count("Read-only file system") == 2, out
    assert hook.read_text() == "#!/bin/sh\necho hook-ran\n"
    assert (repo / ".vscode" / "settings.json").read_text() == '{"x": 1}\n'
    assert "commits 2" in out, out  # the commit went in (and ran the hook)


def test_only_plain_local_folders_become_views(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (tmp_path / "link").symlink_to(folder)
    assert viewable(folder) == (_fs_type(folder) in ("ext4", "xfs", "btrfs", "tmpfs", "ext3", "ext2", "f2fs"))
    assert not viewable(tmp_path / "link")  # a link: the bind resolves it, as before
    assert not viewable(tmp_path / "missing")
    assert not viewable(Path("/proc/sys"))  # not a file system overlayfs stacks on
    assert not viewable(Path("/"))  # mounts inside: an overlay would not show them


def _fs_type(path: Path) -> str:
    done = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return {"ext2/ext3": "ext4"}.get(done.stdout.strip(), done.stdout.strip())


async def test_a_device_file_in_an_editor_folder_cannot_be_opened_inside(repo: Path, home: Path) -> None:
    # A bind is nodev; an overlay bwrap mounts as root is not (a regular user's is, by its
    # user namespace). An archive extracted as root can hold `.vscode/disk`, a block device.
    vscode = repo / ".vscode"
    vscode.mkdir()
    try:
        os.mknod(vscode / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    except PermissionError:  # only root makes device files, and only as root is one a risk
        os.mkfifo(vscode / "zero")
        assert os.geteuid() != 0 and viewable(vscode)  # the user namespace makes it nodev
        return
    assert not viewable(vscode)
    ws, _ = sandboxed(repo, home)
    code, out = await run(ws, "ls .vscode && head -c 4 .vscode/zero", home)
    assert code != 0 and "zero" in out and "Permission denied" in out, out  # seen, not opened
