"""terminal and process tools with real subprocesses."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from hermes_core.command_rules.scope import command_scope
from hermes_core.events import Event, ToolCallProgress
from hermes_core.policy.approval import ApprovalMemory, ApprovalPolicy, Decision, Mode, scope_key
from hermes_core.tools.base import SessionToolState, ToolContext, ToolLimits, ToolResult
from hermes_core.tools.terminal import ProcessTool, TerminalTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope
from tests.support.processes import alive


async def until_dead(pid: int, within: float = 30.0) -> None:  # the cap only catches a hang
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        await asyncio.sleep(0.02)


def make_ctx(root: Path, limits: ToolLimits | None = None) -> tuple[ToolContext, list[Event]]:
    events: list[Event] = []
    workspace = LocalWorkspace(WorkspaceScope(root), kill_grace=0.5)
    return ToolContext("call-7", workspace, SessionToolState(), events.append, limits or ToolLimits()), events


async def terminal(ctx: ToolContext, **arguments: object) -> ToolResult:
    tool = TerminalTool()
    return await tool.run(tool.parse(arguments), ctx)


async def process(ctx: ToolContext, **arguments: object) -> ToolResult:
    tool = ProcessTool()
    return await tool.run(tool.parse(arguments), ctx)


def streamed(events: list[Event]) -> str:
    return "".join(e.output for e in events if isinstance(e, ToolCallProgress))


async def test_exit_codes_and_output(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    ok = await terminal(ctx, command="echo hello; echo warn >&2")
    assert ok.ok and ok.exit_code == 0 and ok.signal is None
    assert ok.text == "Exit code: 0\nhello\nwarn\n"
    assert ok.raw_output == {"exit_code": 0, "signal": None, "timed_out": False, "output": "hello\nwarn\n"}

    failed = await terminal(ctx, command="ls does-not-exist")
    assert not failed.ok and failed.exit_code == 2
    assert failed.text.startswith("Exit code: 2\n") and "does-not-exist" in failed.text

    quiet = await terminal(ctx, command="true")
    assert quiet.text == "Exit code: 0\n(no output)"


async def test_runs_in_the_workspace_root(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    result = await terminal(ctx, command="pwd")
    assert result.text == f"Exit code: 0\n{tmp_path}\n"


async def test_output_is_streamed_as_progress_in_order(tmp_path: Path) -> None:
    ctx, events = make_ctx(tmp_path)
    # Each step waits until the test has seen the step before: output held back to the end stalls it.
    command = "for i in 1 2 3; do echo step $i; until [ -e seen$i ]; do sleep 0.01; done; done"
    running = asyncio.create_task(terminal(ctx, command=command))
    for step in (1, 2, 3):
        for _ in range(3000):  # 30 s: only a hang gets that far
            if f"step {step}\n" in streamed(events):
                break
            await asyncio.sleep(0.01)
        (tmp_path / f"seen{step}").touch()
    result = await running
    progress = [e for e in events if isinstance(e, ToolCallProgress)]
    assert len(progress) >= 3  # arrived while the command ran, not all at the end
    assert all(e.call_id == "call-7" and e.terminal_id is None for e in progress)
    assert streamed(events) == "step 1\nstep 2\nstep 3\n"
    assert result.text.endswith("step 1\nstep 2\nstep 3\n")


async def test_timeout_kills_the_command(tmp_path: Path) -> None:
    ctx, events = make_ctx(tmp_path)
    result = await terminal(ctx, command="echo $$; exec sleep 30", timeout=0.3)
    pid = int(streamed(events))
    assert not result.ok
    assert result.text.startswith("Timed out after 0.3s; the command was killed.")
    assert str(pid) in result.text  # the output so far
    assert result.raw_output is not None and result.raw_output["timed_out"] is True
    await until_dead(pid)


async def test_timeout_is_capped_by_the_limit(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, ToolLimits(max_command_timeout=0.2))
    result = await terminal(ctx, command="sleep 30", timeout=500)
    assert result.text.startswith("Timed out after 0.2s")


async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    ctx, events = make_ctx(tmp_path)
    task = asyncio.create_task(terminal(ctx, command="sleep 60 & echo $!; echo $$; wait"))
    deadline = time.monotonic() + 30  # only a hang gets that far
    while len(streamed(events).split()) < 2:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    child, shell = (int(pid) for pid in streamed(events).split())
    assert alive(child) and alive(shell)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until_dead(shell)
    await until_dead(child)


async def test_long_output_keeps_the_tail(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, ToolLimits(max_output_chars=200))
    result = await terminal(ctx, command="seq 1 5000")
    assert result.ok
    assert "[output cut: showing the last 200 characters]" in result.text
    assert result.text.endswith("4999\n5000\n")
    assert "\n1\n2\n" not in result.text


async def test_background_then_poll_and_kill(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    # returns while the command runs: the poll below finds it still running
    result = await terminal(ctx, command="echo serving; echo $$; exec sleep 60", background=True)
    assert result.ok and "proc-1" in result.text
    assert list(ctx.state.processes) == ["proc-1"]

    deadline = time.monotonic() + 30  # only a hang gets that far
    while True:
        polled = await process(ctx, handle="proc-1", action="poll")
        if len(polled.text.splitlines()) >= 3:
            break
        assert time.monotonic() < deadline
    assert polled.ok and polled.text.startswith(
        "proc-1 (echo serving; echo $$; exec sleep 60) is still running"
    )
    assert "serving" in polled.text
    pid = int(polled.text.splitlines()[-1])

    killed = await process(ctx, handle="proc-1", action="kill")
    assert killed.ok and killed.text.startswith("Killed proc-1") and "serving" in killed.text
    assert ctx.state.processes == {} and ctx.state.process_commands == {}
    await until_dead(pid)


async def test_poll_reports_a_finished_background_command(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    await terminal(ctx, command="echo done; exit 4", background=True)
    deadline = time.monotonic() + 30  # only a hang gets that far
    while "finished" not in (polled := await process(ctx, handle="proc-1", action="poll")).text:
        assert time.monotonic() < deadline
    assert polled.text == "proc-1 (echo done; exit 4) has finished. Exit code: 4. Output:\ndone\n"
    assert polled.exit_code == 4
    second = await terminal(ctx, command="true", background=True)
    assert "proc-2" in second.text
    await process(ctx, handle="proc-1", action="kill")
    await process(ctx, handle="proc-2", action="kill")


async def test_unknown_handle_lists_the_known_ones(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    nothing = await process(ctx, handle="proc-9", action="poll")
    assert (
        not nothing.ok
        and nothing.text == "No background process 'proc-9'. There are no background processes."
    )
    await terminal(ctx, command="sleep 60", background=True)
    unknown = await process(ctx, handle="proc-9", action="kill")
    assert not unknown.ok and "Known handles: proc-1 (sleep 60)." in unknown.text
    await process(ctx, handle="proc-1", action="kill")


async def test_a_missing_cwd_is_an_error_result(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    ctx, _ = make_ctx(gone)
    gone.rmdir()
    result = await terminal(ctx, command="true")
    assert not result.ok and result.text.startswith("Could not start the command")


def test_title_shows_the_command(tmp_path: Path) -> None:
    tool = TerminalTool()
    workspace = LocalWorkspace(WorkspaceScope(tmp_path))
    assert tool.title(tool.parse({"command": "pytest -q"}), workspace) == "Run: pytest -q"
    assert tool.title(tool.parse({"command": "npm run dev", "background": True}), workspace) == (
        "Run in background: npm run dev"
    )


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("git status", "terminal:git status"),
        ("git status --short", "terminal:git status"),
        ("git push origin main", "terminal:git push"),
        ("npm run test -- --watch", "terminal:npm run"),
        ("pytest -q tests/", "terminal:pytest"),
        ("cd web && make build", "terminal:make"),
        ("/usr/bin/ls -la", "terminal:/usr/bin/ls"),
        ("python -m pytest -x", "terminal:python -m pytest"),
        ("python3 scripts/gen.py --all", "terminal:python3 scripts/gen.py"),
        # what an "always" could stretch beyond what was seen is keyed by the whole command
        ("FOO=1 env BAR=2 cargo test", "terminal:FOO=1 env BAR=2 cargo test"),
        ("git add . && git commit -m wip", "terminal:git add . && git commit -m wip"),
        ("make 2>&1 | tail -5", "terminal:make 2>&1 | tail -5"),
        ("sudo apt install foo", "terminal:sudo apt install foo"),
        ("cd /tmp && sudo  rm -rf x", "terminal:cd /tmp && sudo rm -rf x"),
        ("python -c 'import os'", "terminal:python -c 'import os'"),
        ("echo $(cat secret)", "terminal:echo $(cat secret)"),
        ("echo 'unterminated", "terminal:echo 'unterminated"),
    ],
)
def test_always_is_remembered_per_program_and_subcommand(command: str, key: str) -> None:
    tool = TerminalTool()
    args = tool.parse({"command": command})
    facts = tool.approval_facts(args)
    assert facts.command is not None and facts.command.text == command  # declared, not probed
    assert command_scope(facts.command) == command_scope(command)  # the one rule, in command_rules
    assert scope_key(tool, args) == key


def test_always_for_git_status_does_not_cover_git_push(tmp_path: Path) -> None:
    tool = TerminalTool()
    workspace = LocalWorkspace(WorkspaceScope(tmp_path))
    policy = ApprovalPolicy(Mode.ASK, ApprovalMemory())

    def action(command: str) -> str:
        return policy.check(tool, tool.parse({"command": command}), workspace, call_id="c").action

    first = policy.check(tool, tool.parse({"command": "git status"}), workspace, call_id="c")
    assert first.request is not None
    policy.record(first.request, Decision.ALLOW_ALWAYS)
    assert policy.memory.allowed == {"terminal:git status"}
    assert action("git status --short") == "run"
    assert action("git push origin main") == "ask"
    assert action("git status && git push origin main") == "ask"
