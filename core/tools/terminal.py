"""Command tools: `terminal` runs a shell command, `process` looks after background ones."""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import Field

from hermes_core.events import ToolCallProgress, ToolKind
from hermes_core.shell.parse import CommandLine
from hermes_core.shell.shown import shown_line
from hermes_core.tools.base import ApprovalFacts, Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import CommandExit, RunningCommand, Workspace, WorkspaceError

_POLL_WAIT = 0.1  # seconds `process poll` waits for an exit before reporting "running"
_TITLE_CHARS = 120


async def _relay_output(run: RunningCommand, ctx: ToolContext) -> None:
    chunks = run.stream()
    try:
        async for chunk in chunks:
            ctx.emit(ToolCallProgress(ctx.call_id, output=chunk))
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


def _tail(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[-limit:], True)


def _describe_exit(status: CommandExit) -> str:
    if status.signal:
        return f"Killed by {status.signal}"
    return f"Exit code: {status.exit_code}"


def _with_output(header: str, output: str, cut: bool) -> str:
    if cut:
        header += f"\n[output cut: showing the last {len(output)} characters]"
    return f"{header}\n{output}" if output else f"{header}\n(no output)"


class TerminalArgs(ToolArgs):
    command: str = Field(description="The shell command (bash), run in the workspace root.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds before the command is killed; default 120, at most 600.",
    )
    background: bool = Field(
        default=False,
        description="Start it and return at once with a handle (for servers and watchers); "
        "check on it with the process tool.",
    )
    unconfined: bool = Field(
        default=False,
        description="Run outside the sandbox. Only after the sandbox refused this command (the result "
        "says so) and it really needs that; the user is asked every time unless they allowed it always.",
    )


class TerminalTool(Tool[TerminalArgs]):
    """Run a shell command in the workspace root (bash; stdout and stderr merged; no stdin, so use
    non-interactive flags like `-y`). Returns the exit code and the output (the end of it when
    long). Use it for builds, tests, git and other programs — not for reading or searching files
    (read_file, search and list_files are faster) or editing them (patch). Long-running servers:
    background=true."""

    name = "terminal"
    kind: ToolKind = "execute"
    needs_approval = True
    read_only = False
    interactive = True

    def title(self, args: TerminalArgs, workspace: Workspace) -> str:
        # Escaped and on one line; a cut title is not the whole command, so the approval
        # card also shows it whole (`hermes_acp/bridge/permissions.py`).
        command, cut = shown_line(args.command, _TITLE_CHARS)
        if cut:
            command += f" [+{cut} characters]"
        verb = "Run in background" if args.background else "Run"
        if args.unconfined:
            verb += " outside the sandbox"
        return f"{verb}: {command}"

    def approval_facts(self, args: TerminalArgs) -> ApprovalFacts:
        # Read once here; the danger rules, the "always" scope (`terminal:git status`) and
        # the permission rules all look at this one parse.
        return ApprovalFacts(
            command=CommandLine.read(args.command), unconfined=args.unconfined, background=args.background
        )

    async def run(self, args: TerminalArgs, ctx: ToolContext) -> ToolResult:
        if not args.command.strip():
            return ToolResult.error("The command is empty.")
        limits = ctx.limits
        # Outside the sandbox only with the user's approval (the policy sets allow_outside
        # for an approved unconfined call): the model's flag alone never lifts it.
        env = None
        if ctx.allow_outside:
            from hermes_core.fence.command_files import unconfined_environment

            sandbox = ctx.workspace.sandbox
            env = unconfined_environment(sandbox.hidden_env if sandbox is not None else ())
        if args.background:
            full = ctx.state.jobs.take_place()
            if full is not None:
                return ToolResult.error(
                    f"Not started: {full}. Stop one you no longer need with the process tool "
                    "(action 'kill'), or run this one in the foreground."
                )
        try:
            run = await ctx.workspace.start_command(
                args.command, output_limit=limits.max_output_chars, unconfined=ctx.allow_outside, env=env
            )
        except BaseException as exc:
            if args.background:
                ctx.state.jobs.give_back()
            if isinstance(exc, (WorkspaceError, OSError)):
                return ToolResult.error(f"Could not start the command: {exc}")
            raise
        if run.terminal_id:
            ctx.emit(ToolCallProgress(ctx.call_id, terminal_id=run.terminal_id))
        if args.background:
            return self._adopt(run, args.command, ctx)
        timeout = min(args.timeout or limits.command_timeout, limits.max_command_timeout)
        timed_out = False
        try:
            try:
                async with asyncio.timeout(timeout):
                    await _relay_output(run, ctx)
                    status = await run.wait()
            except TimeoutError:
                timed_out = True
                await run.kill()
                status = await run.wait()
            output, was_cut = await run.output()
        finally:
            await run.release()  # on cancellation too: the process must not outlive the call
        output, cut = _tail(output, limits.max_output_chars)
        header = (
            f"Timed out after {timeout:g}s; the command was killed." if timed_out else _describe_exit(status)
        )
        ok = not timed_out and status.exit_code == 0
        refused = None if ok else _sandbox_refusal(run, output)
        text = _with_output(header, output, cut or was_cut)
        if refused:
            text += (
                f"\n\n[sandbox] The sandbox likely refused this command: {refused}. If the task needs "
                "that, call terminal again with the same command and unconfined=true; the user is asked "
                "to approve running it outside the sandbox."
            )
        undone = run.sandbox.take_undone() if run.sandbox is not None else []
        if undone:
            text += (
                "\n\n[sandbox] Undone after the command, because it would run outside the sandbox later: "
                + "; ".join(undone)
                + ". To create such a file, use write_file, which asks the user."
            )
        raw: dict[str, object] = {
            "exit_code": status.exit_code,
            "signal": status.signal,
            "timed_out": timed_out,
            "output": output,
        }
        if run.sandbox is not None:
            raw["sandboxed"] = True
        if refused:
            raw["sandbox_refused"] = refused
        if undone:
            raw["sandbox_undone"] = undone
        return ToolResult(
            text,
            ok=ok,
            raw_output=raw,
            exit_code=status.exit_code,
            signal=status.signal,
            terminal_id=run.terminal_id,
        )

    def _adopt(self, run: RunningCommand, command: str, ctx: ToolContext) -> ToolResult:
        handle = f"proc-{ctx.state.next_handle}"
        ctx.state.next_handle += 1
        ctx.state.processes[handle] = run
        ctx.state.process_commands[handle] = command
        ctx.state.jobs.watch(handle, command, ctx.call_id, run, ctx.state.processes)
        return ToolResult(
            f"Started in the background as {handle}. Use the process tool with handle {handle!r}: "
            "action 'poll' shows its status and output, 'kill' stops it.",
            raw_output={"handle": handle},
            terminal_id=run.terminal_id,
        )


def _sandbox_refusal(run: RunningCommand, output: str) -> str | None:
    return run.sandbox.explain_refusal(output) if run.sandbox is not None else None


class ProcessArgs(ToolArgs):
    handle: str = Field(description="The handle terminal returned for a background command, e.g. proc-1.")
    action: Literal["poll", "kill"] = Field(
        description="poll: whether it is still running, its exit status and its output so far; "
        "kill: stop it (and everything it started)."
    )


class ProcessTool(Tool[ProcessArgs]):
    """Check on or stop a command started with terminal background=true."""

    name = "process"
    kind: ToolKind = "execute"
    read_only = False

    def title(self, args: ProcessArgs, workspace: Workspace) -> str:
        return f"{'Poll' if args.action == 'poll' else 'Kill'} {args.handle}"

    async def run(self, args: ProcessArgs, ctx: ToolContext) -> ToolResult:
        state = ctx.state
        run = state.processes.get(args.handle)
        if run is None:
            known = ", ".join(f"{h} ({state.process_commands.get(h, '?')})" for h in state.processes)
            listing = f"Known handles: {known}." if known else "There are no background processes."
            return ToolResult.error(f"No background process {args.handle!r}. {listing}")
        command = state.process_commands.get(args.handle, "")
        label = f"{args.handle} ({command})" if command else args.handle
        if args.action == "kill":
            state.jobs.forget(args.handle)
            try:
                await run.kill()
                output, was_cut = await run.output()
            finally:
                await run.release()
                state.processes.pop(args.handle, None)
                state.process_commands.pop(args.handle, None)
            output, cut = _tail(output, ctx.limits.max_output_chars)
            return ToolResult(_with_output(f"Killed {label}. Its output:", output, cut or was_cut))
        status: CommandExit | None
        try:
            status = await asyncio.wait_for(run.wait(), _POLL_WAIT)
        except TimeoutError:
            status = None
        output, was_cut = await run.output()
        output, cut = _tail(output, ctx.limits.max_output_chars)
        if status is None:
            header = f"{label} is still running. Output so far:"
        else:
            header = f"{label} has finished. {_describe_exit(status)}. Output:"
        return ToolResult(
            _with_output(header, output, cut or was_cut),
            raw_output={
                "running": status is None,
                "exit_code": status.exit_code if status else None,
                "signal": status.signal if status else None,
            },
            exit_code=status.exit_code if status else None,
            signal=status.signal if status else None,
        )
