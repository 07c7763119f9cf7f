"""LocalWorkspace and WorkspaceScope on a real temp dir with real subprocesses."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from hermes_core.workspace import (
    BinaryFile,
    FileTooLarge,
    LocalWorkspace,
    OutsideWorkspace,
    WorkspaceError,
    WorkspaceScope,
)
from tests.support.processes import alive


async def until_dead(pid: int, within: float = 30.0) -> None:  # the cap only catches a hang
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        await asyncio.sleep(0.02)


@pytest.fixture
def ws(tmp_path: Path) -> LocalWorkspace:
    return LocalWorkspace(WorkspaceScope(tmp_path), kill_grace=0.5)


# --- scope --------------------------------------------------------------------------


def test_scope_refuses_dotdot_absolute_and_symlink_escapes(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    (root / "link").symlink_to(outside)
    scope = WorkspaceScope(root)

    for raw in ("../secret.txt", str(outside), "link", "sub/../../secret.txt"):
        with pytest.raises(OutsideWorkspace) as caught:
            scope.resolve(raw)
        assert str(outside) in str(caught.value)
        assert scope.resolve(raw, allow_outside=True) == outside

    assert scope.resolve("src/new.py") == root / "src" / "new.py"
    assert scope.resolve(str(root)) == root


def test_scope_accepts_extra_roots(tmp_path: Path) -> None:
    root, extra = tmp_path / "a", tmp_path / "b"
    root.mkdir()
    extra.mkdir()
    scope = WorkspaceScope(root, (extra,))
    assert scope.resolve("../b/file.txt") == extra / "file.txt"
    with pytest.raises(OutsideWorkspace):
        scope.resolve("../c/file.txt")


def test_scope_symlink_loop_is_a_workspace_error(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(WorkspaceError, match="cannot resolve"):
        WorkspaceScope(tmp_path).resolve("a/x")


# --- files --------------------------------------------------------------------------


async def test_read_text_decodes_utf8(ws: LocalWorkspace, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes("héllo\r\nwörld\n".encode())
    assert await ws.read_text(tmp_path / "a.txt") == "héllo\r\nwörld\n"


async def test_read_text_refuses_binary_and_huge_files(tmp_path: Path) -> None:
    ws = LocalWorkspace(WorkspaceScope(tmp_path), max_read_bytes=1000)
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + b"x" * 100)
    with pytest.raises(BinaryFile, match=r"binary file \(111 bytes\)"):
        await ws.read_text(tmp_path / "img.png")
    (tmp_path / "big.log").write_text("line\n" * 400)
    with pytest.raises(FileTooLarge) as caught:
        await ws.read_text(tmp_path / "big.log")
    message = str(caught.value)
    assert "2.0 KB" in message and "1000 bytes" in message and "search" in message
    with pytest.raises(FileNotFoundError):
        await ws.read_text(tmp_path / "missing.txt")


async def test_write_text_creates_parents_and_keeps_the_mode(ws: LocalWorkspace, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "run.sh"
    await ws.write_text(target, "echo one\n")
    assert target.read_text() == "echo one\n"
    target.chmod(0o750)
    await ws.write_text(target, "echo two\n")
    assert target.read_text() == "echo two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.sh"]  # no temp file left


async def test_write_text_through_a_symlink_keeps_the_link(ws: LocalWorkspace, tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")
    await ws.write_text(tmp_path / "alias.txt", "new")
    assert (tmp_path / "alias.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new"


# --- commands -----------------------------------------------------------------------


async def test_command_merges_output_and_reports_exit_code(ws: LocalWorkspace, tmp_path: Path) -> None:
    run = await ws.start_command("pwd; echo oops >&2; exit 3")
    chunks = [chunk async for chunk in run.stream()]
    status = await run.wait()
    await run.release()
    await run.release()  # a second release is harmless
    assert "".join(chunks) == f"{tmp_path}\noops\n"
    assert (status.exit_code, status.signal) == (3, None)
    assert await run.output() == (f"{tmp_path}\noops\n", False)
    assert run.terminal_id is None


async def test_command_env_and_cwd_without_touching_os_environ(ws: LocalWorkspace, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    run = await ws.start_command(
        'echo "$HERMES_PROBE:$PWD:${PATH:+has-path}"', cwd=tmp_path / "sub", env={"HERMES_PROBE": "yes"}
    )
    await run.wait()
    assert (await run.output())[0] == f"yes:{tmp_path / 'sub'}:has-path\n"
    assert "HERMES_PROBE" not in os.environ
    await run.release()


async def test_command_in_missing_directory_is_a_workspace_error(ws: LocalWorkspace, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="cannot start"):
        await ws.start_command("true", cwd=tmp_path / "nope")


async def test_utf8_split_across_chunks_decodes_cleanly(ws: LocalWorkspace) -> None:
    run = await ws.start_command(r"printf '\303'; sleep 0.1; printf '\251\n'")
    chunks = [chunk async for chunk in run.stream()]
    await run.release()
    assert "".join(chunks) == "é\n"


async def test_output_cap_keeps_the_tail(tmp_path: Path) -> None:
    ws = LocalWorkspace(WorkspaceScope(tmp_path))
    run = await ws.start_command("seq 1 20000", output_limit=100)
    await run.wait()
    text, truncated = await run.output()
    await run.release()
    assert truncated
    assert len(text) == 100
    assert text.endswith("19999\n20000\n")


@pytest.mark.parametrize(
    ("command", "everything"),
    [
        ("printf '%0100d' 7", "0" * 99 + "7"),  # exactly the limit: nothing cut
        ("printf '%0101d' 7", "0" * 100 + "7"),
        ("printf '%0250d' 7", "0" * 249 + "7"),  # one burst past twice the limit
        ("seq 1 2000", "".join(f"{n}\n" for n in range(1, 2001))),
    ],
)
async def test_output_reports_whether_it_was_cut(ws: LocalWorkspace, command: str, everything: str) -> None:
    run = await ws.start_command(command, output_limit=100)
    await run.wait()
    text, truncated = await run.output()
    await run.release()
    assert text == everything[-100:]
    assert truncated is (len(everything) > 100)


async def test_kill_reaches_the_whole_process_group(ws: LocalWorkspace) -> None:
    run = await ws.start_command("sleep 60 & echo $!; wait")
    child = int(await anext(run.stream()))
    assert alive(child)
    await run.kill()
    status = await run.wait()
    assert status.signal == "SIGTERM" and status.exit_code is None
    await until_dead(child)
    await run.release()


async def test_kill_escalates_to_sigkill(ws: LocalWorkspace) -> None:
    run = await ws.start_command("trap '' TERM; echo ready; while :; do sleep 0.05; done")
    assert await anext(run.stream()) == "ready\n"
    await run.kill()
    status = await run.wait()
    assert status.signal == "SIGKILL"  # it ignores SIGTERM: only the escalation ends it
    await run.release()


async def test_leftover_child_does_not_hold_the_command_open(ws: LocalWorkspace) -> None:
    run = await ws.start_command("sleep 60 & echo $!")
    chunks = [chunk async for chunk in run.stream()]
    status = await run.wait()
    assert status.exit_code == 0
    child = int("".join(chunks))
    assert alive(child)  # the stream and the wait ended while the child still runs
    await run.release()  # release cleans up what the shell left behind
    await until_dead(child)


async def test_cancelled_wait_then_release_kills_the_process(ws: LocalWorkspace) -> None:
    run = await ws.start_command("echo $$; exec sleep 60")
    pid = int(await anext(run.stream()))

    waiting = asyncio.Event()

    async def waiter() -> None:
        try:
            waiting.set()
            await run.wait()
        finally:
            await run.release()

    task = asyncio.create_task(waiter())
    await waiting.wait()  # the test runs again only once the waiter is suspended in wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until_dead(pid)


def test_a_hard_linked_file_counts_as_outside_but_directories_and_new_files_do_not(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "plain.txt").write_text("x")
    outside = tmp_path / "secret"
    outside.write_text("key")
    os.link(outside, root / "linked.txt")
    scope = WorkspaceScope(root)
    assert scope.outside(scope.absolute("linked.txt"))
    assert not scope.outside(scope.absolute("plain.txt"))
    assert not scope.outside(scope.absolute("src"))  # a directory has several links by nature
    assert not scope.outside(scope.absolute("new.txt"))
    with pytest.raises(OutsideWorkspace, match="hard link"):
        scope.resolve("linked.txt")
    assert scope.resolve("linked.txt", allow_outside=True) == root / "linked.txt"
