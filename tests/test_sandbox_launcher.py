"""The launcher script an editor runs for a confined command: what it runs, and that it is
never left where the confined command could change it."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from hermes_core.sandbox.launcher import LAUNCHER_NAME, Launchers


def test_the_launcher_runs_the_launch_with_the_command_line_as_given(tmp_path: Path) -> None:
    # A stand-in for bwrap: `env -- bash -c CMD` runs the command as bwrap's tail does.
    command = "printf '%s|' \"it's\" two; echo $((6 * 7))"
    launch = ["env", "--", "bash", "-c", command]
    argv = Launchers(tmp_path).presentable(launch, command)
    assert argv[1:] == [command] and Path(argv[0]).name == LAUNCHER_NAME
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert done.stdout == "it's|two|42\n"
    mode = stat.S_IMODE(Path(argv[0]).stat().st_mode)
    assert mode & 0o077 == 0  # only its owner may touch it
    assert stat.S_IMODE(Path(argv[0]).parent.parent.stat().st_mode) == 0o700
    # The same launch again: the same script, not a new file per command.
    again = Launchers(tmp_path)
    first = again.presentable(launch, command)
    assert again.presentable(launch, command) == first


def test_a_launch_that_could_write_the_launcher_keeps_the_plain_launch(tmp_path: Path) -> None:
    """The editor runs the script unconfined: a confined command able to rewrite it would
    escape with the next launch. Then the launch is shown as it is."""
    command = "make"
    for writable in (tmp_path, tmp_path.parent):
        launch = [
            "bwrap",
            "--ro-bind",
            "/",
            "/",
            "--bind",
            str(writable),
            str(writable),
            "--",
            "bash",
            "-c",
            command,
        ]
        assert Launchers(tmp_path).presentable(launch, command) == launch
    overlay = ["bwrap", "--overlay-src", "/usr", "--overlay", str(tmp_path), "/work", "/usr", "--", command]
    assert Launchers(tmp_path).presentable(overlay, command) == overlay
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    launch = ["bwrap", "--bind", str(elsewhere), str(elsewhere), "--", "bash", "-c", command]
    assert Launchers(tmp_path).presentable(launch, command)[1:] == [command]


def test_the_sandbox_set_up_before_the_command_line_still_runs(tmp_path: Path) -> None:
    """The sandbox puts its process cap in the same shell line (`ulimit -u N || exit 126;
    <command>`): the launcher keeps that head and still shows only the command line."""
    command = "ulimit -u; echo \"$((6 * 7))\" 'quoted;' $HOME_NOT_SET"
    launch = ["env", "--", "bash", "-c", f"ulimit -u 77 || exit 126; {command}"]
    argv = Launchers(tmp_path).presentable(launch, command)
    assert argv[1:] == [command] and Path(argv[0]).name == LAUNCHER_NAME
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert done.stdout == "77\n42 quoted;\n"
