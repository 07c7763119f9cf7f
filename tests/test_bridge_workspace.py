"""ClientWorkspace against an editor on the other end of a real SDK connection.

The editor here keeps unsaved buffers over a real temp dir and runs its terminals as real
subprocesses (through LocalWorkspace), the way Zed or VS Code would.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from hermes_acp.bridge.workspace import ClientWorkspace
from hermes_core.execution.processes import LocalCommand
from hermes_core.workspace import (
    BinaryFile,
    FileTooLarge,
    LocalWorkspace,
    WorkspaceError,
    WorkspaceScope,
)
from tests.support.bridge_pair import BridgePair, open_pair

SID = "sess-w"


class Editor:
    """Answers fs/* and terminal/* like an editor: buffers first, then the disk."""

    def __init__(self, root: Path) -> None:
        self.buffers: dict[str, str] = {}
        self.terminals: dict[str, LocalCommand] = {}
        self.released: list[str] = []
        self.fail_writes = False
        self._local = LocalWorkspace(WorkspaceScope(root), kill_grace=0.2)

    async def __call__(self, method: str, params: dict[str, Any]) -> Any:
        if method == "fs/read_text_file":
            path = params["path"]
            if path in self.buffers:
                return {"content": self.buffers[path]}
            try:
                return {"content": await asyncio.to_thread(Path(path).read_text)}
            except FileNotFoundError:
                raise RequestError.internal_error({"details": f"No such file: {path}"}) from None
        if method == "fs/write_text_file":
            if self.fail_writes:
                raise RequestError.internal_error({"details": "buffer is read-only"})
            self.buffers[params["path"]] = params["content"]
            await asyncio.to_thread(Path(params["path"]).write_text, params["content"])
            return {}
        if method == "terminal/create":
            assert params["command"] == "bash" and params["args"][0] == "-c"
            env = {e["name"]: e["value"] for e in params.get("env", [])}
            command = await self._local.start_command(
                params["args"][1], cwd=Path(params["cwd"]), env=env, output_limit=params["outputByteLimit"]
            )
            terminal_id = f"term-{len(self.terminals) + 1}"
            self.terminals[terminal_id] = command
            return {"terminalId": terminal_id}
        command = self.terminals[params["terminalId"]]
        if method == "terminal/wait_for_exit":
            exit = await command.wait()
            return {"exitCode": exit.exit_code, "signal": exit.signal}
        if method == "terminal/output":
            output, truncated = await command.output()
            result: dict[str, Any] = {"output": output, "truncated": truncated}
            if not command.running:
                exit = await command.wait()
                result["exitStatus"] = {"exitCode": exit.exit_code, "signal": exit.signal}
            return result
        if method == "terminal/kill":
            await command.kill()
            return {}
        if method == "terminal/release":
            self.released.append(params["terminalId"])
            await command.release()
            return {}
        raise RequestError.method_not_found(method)


@pytest.fixture
async def setup(tmp_path):
    editor = Editor(tmp_path)
    pair = await open_pair(editor)
    yield pair, editor, tmp_path
    await pair.aclose()
    for command in editor.terminals.values():
        await command.release()


def workspace(pair: BridgePair, root: Path, *, read=True, write=True, terminal=True) -> ClientWorkspace:
    scope = WorkspaceScope(root)
    return ClientWorkspace(
        scope,
        pair.agent,
        SID,
        read=read,
        write=write,
        terminal=terminal,
        local=LocalWorkspace(scope, max_read_bytes=1000, kill_grace=0.2),
    )


async def test_read_sees_the_editors_unsaved_buffer(setup):
    pair, editor, root = setup
    (root / "a.py").write_text("on disk\n")
    editor.buffers[str(root / "a.py")] = "unsaved edit\n"
    assert await workspace(pair, root).read_text(root / "a.py") == "unsaved edit\n"
    assert pair.calls("fs/read_text_file") == [{"sessionId": SID, "path": str(root / "a.py")}]


async def test_read_makes_relative_paths_absolute_for_the_editor(setup):
    pair, _, root = setup
    (root / "b.txt").write_text("b\n")
    assert await workspace(pair, root).read_text(Path("b.txt")) == "b\n"
    assert pair.calls("fs/read_text_file")[0]["path"] == str(root / "b.txt")


async def test_a_new_unsaved_buffer_is_readable(setup):
    pair, editor, root = setup
    editor.buffers[str(root / "new.py")] = "draft\n"
    assert await workspace(pair, root).read_text(root / "new.py") == "draft\n"


async def test_missing_file_is_file_not_found(setup):
    pair, _, root = setup
    with pytest.raises(FileNotFoundError):
        await workspace(pair, root).read_text(root / "nope.py")
    assert len(pair.calls("fs/read_text_file")) == 1


async def test_binary_and_oversized_files_are_refused_on_disk_without_asking(setup):
    pair, _, root = setup
    (root / "img.bin").write_bytes(b"\x89PNG\0\0\0")
    (root / "big.txt").write_text("x" * 5000)
    ws = workspace(pair, root)
    with pytest.raises(BinaryFile):
        await ws.read_text(root / "img.bin")
    with pytest.raises(FileTooLarge):
        await ws.read_text(root / "big.txt")
    assert pair.calls("fs/read_text_file") == []


async def test_the_editor_and_the_disk_refuse_a_file_in_the_same_words(setup):
    pair, _, root = setup
    (root / "img.bin").write_bytes(b"\x89PNG\0\0\0")
    (root / "big.txt").write_text("x" * 5000)
    editor, disk = workspace(pair, root), LocalWorkspace(WorkspaceScope(root), max_read_bytes=1000)
    for name in ("img.bin", "big.txt"):
        with pytest.raises(WorkspaceError) as from_editor:
            await editor.read_text(root / name)
        with pytest.raises(WorkspaceError) as from_disk:
            await disk.read_text(root / name)
        assert str(from_editor.value) == str(from_disk.value)
        assert "binary file (7 bytes)" in str(from_disk.value) or "1000 bytes read limit" in str(
            from_disk.value
        )


async def test_editor_read_error_on_an_existing_file_is_a_workspace_error(setup):
    pair, _, root = setup
    (root / "c.txt").write_text("c")

    async def refuse(method: str, params: dict) -> Any:
        raise RequestError.internal_error({"details": "permission denied"})

    pair.responder = refuse
    with pytest.raises(WorkspaceError, match="permission denied"):
        await workspace(pair, root).read_text(root / "c.txt")


async def test_without_read_capability_reads_come_from_disk(setup):
    pair, editor, root = setup
    (root / "a.py").write_text("on disk\n")
    editor.buffers[str(root / "a.py")] = "unsaved edit\n"
    assert await workspace(pair, root, read=False).read_text(root / "a.py") == "on disk\n"
    assert pair.received == []


async def test_write_goes_to_the_editor_when_advertised(setup):
    pair, editor, root = setup
    await workspace(pair, root).write_text(root / "pkg" / "mod.py", "x = 1\n")
    assert pair.calls("fs/write_text_file") == [
        {"sessionId": SID, "path": str(root / "pkg" / "mod.py"), "content": "x = 1\n"}
    ]
    assert editor.buffers[str(root / "pkg" / "mod.py")] == "x = 1\n"


async def test_write_error_from_the_editor_is_a_workspace_error(setup):
    pair, editor, root = setup
    editor.fail_writes = True
    with pytest.raises(WorkspaceError, match="read-only"):
        await workspace(pair, root).write_text(root / "x.py", "x")


async def test_without_write_capability_writes_go_to_disk(setup):
    pair, _, root = setup
    await workspace(pair, root, write=False).write_text(root / "out.txt", "hello")
    assert (root / "out.txt").read_text() == "hello"
    assert pair.received == []


async def test_terminal_create_wait_output_release(setup):
    pair, editor, root = setup
    (root / "sub").mkdir()
    ws = workspace(pair, root)
    command = await ws.start_command("echo hi from $WHO; pwd", cwd=Path("sub"), env={"WHO": "bridge"})
    assert command.terminal_id == "term-1"
    assert [chunk async for chunk in command.stream()] == []  # the editor shows it live
    exit = await command.wait()
    assert exit.exit_code == 0 and exit.signal is None
    output, truncated = await command.output()
    assert output == f"hi from bridge\n{root / 'sub'}\n" and truncated is False
    await command.release()
    await command.release()
    assert pair.methods == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    [create] = pair.calls("terminal/create")
    assert create == {
        "sessionId": SID,
        "command": "bash",
        "args": ["-c", "echo hi from $WHO; pwd"],
        "cwd": str(root / "sub"),
        "outputByteLimit": 64_000,
        # The command line as the model wrote it, for a client's header or title.
        "_meta": {"hermes": {"command": "echo hi from $WHO; pwd"}},
        "env": [{"name": "WHO", "value": "bridge"}],
    }
    assert editor.released == ["term-1"]
    # Output asked for after the release is what was last seen, not a call on a dead terminal.
    assert await command.output() == (output, False)
    assert pair.methods.count("terminal/output") == 1


@pytest.mark.parametrize("width", [150, 250, 5000])  # 250 and up: one burst past twice the limit
async def test_truncated_flag_comes_from_the_editor(setup, width):
    pair, _, root = setup
    command = await workspace(pair, root).start_command(f"printf '%0{width}d' 7", output_limit=100)
    await command.wait()
    output, truncated = await command.output()
    assert truncated is True and output == "0" * 99 + "7"
    assert pair.calls("terminal/create")[0]["outputByteLimit"] == 100
    await command.release()


async def test_kill_then_release_releases_once(setup):
    pair, _, root = setup
    command = await workspace(pair, root).start_command("sleep 30")
    await command.kill()
    exit = await asyncio.wait_for(command.wait(), 5)
    assert exit.exit_code != 0 or exit.signal is not None
    await command.release()
    await command.release()
    await command.kill()  # after release: nothing to kill, no call
    assert pair.methods.count("terminal/kill") == 1
    assert pair.methods.count("terminal/release") == 1


async def test_cancelled_wait_still_releases_exactly_once(setup):
    pair, editor, root = setup
    ws = workspace(pair, root)
    started = asyncio.Event()

    async def tool() -> None:
        command = await ws.start_command("sleep 30")
        started.set()
        try:
            await command.wait()
        finally:
            await command.release()
            await command.release()

    task = asyncio.create_task(tool())
    await asyncio.wait_for(started.wait(), 5)
    await pair.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await pair.settle()
    assert pair.methods.count("terminal/release") == 1
    assert editor.released == ["term-1"]
    assert not editor.terminals["term-1"].running  # the editor killed it on release


async def test_release_survives_a_second_cancel_mid_release(setup):
    pair, editor, root = setup
    command = await workspace(pair, root).start_command("sleep 30")
    release = asyncio.create_task(command.release())
    await asyncio.sleep(0)
    release.cancel()
    with pytest.raises(asyncio.CancelledError):
        await release
    await command.release()  # waits for the one release already on its way
    await pair.settle()
    assert editor.released == ["term-1"]


async def test_release_error_is_logged_not_raised(setup, caplog):
    pair, _, root = setup
    command = await workspace(pair, root).start_command("true")
    await command.wait()

    async def gone(method: str, params: dict) -> Any:
        raise RequestError.invalid_params({"details": "unknown terminal"})

    pair.responder = gone
    await command.release()
    assert "unknown terminal" in caplog.text


async def test_without_terminal_capability_commands_run_locally(setup):
    pair, _, root = setup
    command = await workspace(pair, root, terminal=False).start_command("echo local")
    assert command.terminal_id is None
    assert "".join([chunk async for chunk in command.stream()]) == "local\n"
    await command.release()
    assert pair.received == []


async def test_only_advertised_methods_are_ever_called(setup):
    pair, _, root = setup
    (root / "f.txt").write_text("f\n")
    ws = workspace(pair, root, read=True, write=False, terminal=False)
    await ws.read_text(root / "f.txt")
    await ws.write_text(root / "g.txt", "g\n")
    command = await ws.start_command("true")
    await command.wait()
    await command.release()
    assert pair.methods == ["fs/read_text_file"]
    assert (root / "g.txt").read_text() == "g\n"
