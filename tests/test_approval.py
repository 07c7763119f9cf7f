"""The approval policy per mode and remembered decisions, on real tools and real temp dirs.

The dangerous-command rules themselves are tested in test_command_rules.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel

from hermes_core.events import ToolKind
from hermes_core.policy.approval import ApprovalMemory, ApprovalPolicy, Decision, Mode, PolicyVerdict
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.shell.parse import CommandLine
from hermes_core.tools.base import ApprovalFacts, Tool, ToolContext, ToolResult
from hermes_core.workspace import Workspace, WorkspaceScope

# --------------------------------------------------------------------------------------
# Small real tools: one of each kind the policy tells apart


class PathArgs(BaseModel):
    path: str


class CommandArgs(BaseModel):
    command: str
    cwd: str | None = None


class PathTool(Tool[PathArgs]):
    """A tool on one file, titled by its verb and the file."""

    args_model = PathArgs
    verb = ""

    def title(self, args: PathArgs, workspace: Workspace) -> str:
        return f"{self.verb} {args.path}"

    def paths(self, args: PathArgs) -> list[str]:
        return [args.path]


class PeekTool(PathTool):
    name = "peek"
    description = "Read a file."
    kind: ToolKind = "read"
    verb = "Read"

    async def run(self, args: PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(await ctx.workspace.read_text(ctx.workspace.scope.resolve(args.path)))


class ScribbleTool(PathTool):
    name = "scribble"
    description = "Write a line into a file."
    kind: ToolKind = "edit"
    needs_approval = True
    read_only = False
    verb = "Edit"

    async def run(self, args: PathArgs, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.scope.resolve(args.path, allow_outside=ctx.allow_outside)
        await ctx.workspace.write_text(path, "scribbled\n")
        return ToolResult(f"wrote {path}")


class ShellTool(Tool[CommandArgs]):
    name = "terminal"
    description = "Run a command."
    args_model = CommandArgs
    kind: ToolKind = "execute"
    needs_approval = True
    read_only = False

    def title(self, args: CommandArgs, workspace: Workspace) -> str:
        return f"Run: {args.command}"

    def paths(self, args: CommandArgs) -> list[str]:
        return [args.cwd] if args.cwd else []

    def approval_facts(self, args: CommandArgs) -> ApprovalFacts:
        return ApprovalFacts(command=CommandLine.read(args.command))

    async def run(self, args: CommandArgs, ctx: ToolContext) -> ToolResult:
        running = await ctx.workspace.start_command(args.command)
        exit_ = await running.wait()
        return ToolResult((await running.output())[0], exit_code=exit_.exit_code)


PEEK, SCRIBBLE, SHELL = PeekTool(), ScribbleTool(), ShellTool()


@dataclass
class ScopedWorkspace:
    """All `check` needs of a workspace: its scope, and no sandbox (as with it off)."""

    scope: WorkspaceScope
    sandbox: Sandbox | None = None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    return root


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    other = tmp_path / "elsewhere"
    (other / "sub").mkdir(parents=True)
    return other


@pytest.fixture
def workspace(project: Path) -> ScopedWorkspace:
    return ScopedWorkspace(WorkspaceScope(project))


def policy(mode: Mode, memory: ApprovalMemory | None = None) -> ApprovalPolicy:
    return ApprovalPolicy(mode, memory if memory is not None else ApprovalMemory())


def call(tool: Tool, workspace: ScopedWorkspace, pol: ApprovalPolicy, **arguments: str) -> PolicyVerdict:
    return pol.check(tool, tool.parse(arguments), workspace, call_id="call-1")


# --------------------------------------------------------------------------------------
# The policy per mode

INSIDE = {
    # (mode, tool): action for a call inside the workspace
    (Mode.ASK, "peek"): "run",
    (Mode.ASK, "scribble"): "ask",
    (Mode.ASK, "terminal"): "ask",
    (Mode.ACCEPT_EDITS, "peek"): "run",
    (Mode.ACCEPT_EDITS, "scribble"): "run",
    (Mode.ACCEPT_EDITS, "terminal"): "ask",
    (Mode.PLAN, "peek"): "run",
    (Mode.PLAN, "scribble"): "reject",
    (Mode.PLAN, "terminal"): "reject",
    (Mode.YOLO, "peek"): "run",
    (Mode.YOLO, "scribble"): "run",
    (Mode.YOLO, "terminal"): "run",
}


def inside_call(tool_name: str) -> tuple[Tool, dict[str, str]]:
    if tool_name == "peek":
        return PEEK, {"path": "src/app.py"}
    if tool_name == "scribble":
        return SCRIBBLE, {"path": "src/new.py"}
    return SHELL, {"command": "make test"}


@pytest.mark.parametrize(("mode", "tool_name"), list(INSIDE))
def test_policy_inside_the_workspace(workspace: ScopedWorkspace, mode: Mode, tool_name: str) -> None:
    tool, arguments = inside_call(tool_name)
    verdict = call(tool, workspace, policy(mode), **arguments)
    assert verdict.action == INSIDE[mode, tool_name]
    assert not verdict.allow_outside
    if verdict.action == "ask":
        assert verdict.request is not None
        assert verdict.request.outside_paths == ()
        assert verdict.request.rule is None
        assert verdict.request.reason == ("edits a file" if tool_name == "scribble" else "runs a command")
    if verdict.action == "reject":
        assert "plan mode" in verdict.reason
        assert verdict.request is not None and verdict.request.tool == tool_name


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("tool_name", ["peek", "scribble", "terminal"])
def test_policy_outside_the_workspace_asks_in_every_mode(
    workspace: ScopedWorkspace, elsewhere: Path, mode: Mode, tool_name: str
) -> None:
    target = elsewhere / "sub" / "notes.txt"
    if tool_name == "terminal":
        tool, arguments = SHELL, {"command": "ls", "cwd": str(elsewhere / "sub")}
    else:
        tool, arguments = (PEEK if tool_name == "peek" else SCRIBBLE), {"path": str(target)}
    verdict = call(tool, workspace, policy(mode), **arguments)
    if mode is Mode.PLAN and tool_name != "peek":
        assert verdict.action == "reject"
        return
    assert verdict.action == "ask"
    assert verdict.allow_outside
    assert verdict.request is not None
    assert verdict.request.reason == "outside the workspace"
    expected = elsewhere / "sub" if tool_name == "terminal" else target
    assert verdict.request.outside_paths == (str(expected.resolve()),)


def test_dotdot_and_symlinks_that_leave_the_workspace_ask(
    workspace: ScopedWorkspace, project: Path, elsewhere: Path
) -> None:
    (project / "link").symlink_to(elsewhere, target_is_directory=True)
    yolo = policy(Mode.YOLO)
    through_link = call(SCRIBBLE, workspace, yolo, path="link/sub/x.txt")
    assert through_link.action == "ask"
    assert through_link.request is not None
    assert through_link.request.outside_paths == (str((elsewhere / "sub" / "x.txt").resolve()),)
    assert call(SCRIBBLE, workspace, yolo, path="../elsewhere/y.txt").action == "ask"
    assert call(SCRIBBLE, workspace, yolo, path="src/../src/z.txt").action == "run"


def test_the_request_shows_the_call(workspace: ScopedWorkspace) -> None:
    verdict = call(SHELL, workspace, policy(Mode.ASK), command="git status -s")
    request = verdict.request
    assert request is not None
    assert (request.call_id, request.tool, request.kind) == ("call-1", "terminal", "execute")
    assert request.title == "Run: git status -s"
    assert request.arguments == {"command": "git status -s", "cwd": None}
    assert request.scope == "terminal:git status"


def test_mode_can_change_between_calls(workspace: ScopedWorkspace) -> None:
    pol = policy(Mode.ASK)
    assert call(SCRIBBLE, workspace, pol, path="a.py").action == "ask"
    pol.mode = Mode.ACCEPT_EDITS
    assert call(SCRIBBLE, workspace, pol, path="a.py").action == "run"
    pol.mode = Mode.PLAN
    assert call(SCRIBBLE, workspace, pol, path="a.py").action == "reject"


# --------------------------------------------------------------------------------------
# Dangerous commands and remembered decisions


@pytest.mark.parametrize("mode", [Mode.ASK, Mode.ACCEPT_EDITS, Mode.YOLO])
def test_dangerous_commands_ask_in_every_mode_that_runs_commands(
    workspace: ScopedWorkspace, mode: Mode
) -> None:
    verdict = call(SHELL, workspace, policy(mode), command="cd src && git push --force")
    assert verdict.action == "ask"
    assert verdict.request is not None
    assert verdict.request.dangerous
    assert verdict.request.rule == "force push (git push --force)"
    assert verdict.reason == "dangerous command: force push (git push --force)"


def test_dangerous_command_asks_even_when_its_scope_is_always_allowed(workspace: ScopedWorkspace) -> None:
    memory = ApprovalMemory(allowed={"terminal:rm"})
    pol = policy(Mode.ASK, memory)
    assert call(SHELL, workspace, pol, command="rm old.txt").action == "run"
    assert call(SHELL, workspace, pol, command="rm -rf ~").action == "ask"


def test_allow_always_on_a_dangerous_command_is_not_remembered(workspace: ScopedWorkspace) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    first = call(SHELL, workspace, pol, command="rm -rf /")
    assert first.request is not None
    pol.record(first.request, Decision.ALLOW_ALWAYS)
    assert memory.allowed == set()
    assert call(SHELL, workspace, pol, command="rm -rf /").action == "ask"
    # nor does it cover the harmless commands that share its scope
    assert call(SHELL, workspace, pol, command="rm notes.txt").action == "ask"


def test_allow_always_for_an_edit_tool_covers_its_calls_inside_the_workspace(
    workspace: ScopedWorkspace, elsewhere: Path
) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    first = call(SCRIBBLE, workspace, pol, path="src/a.py")
    assert first.action == "ask" and first.request is not None
    pol.record(first.request, Decision.ALLOW_ALWAYS)
    assert memory.allowed == {"scribble"}
    assert call(SCRIBBLE, workspace, pol, path="docs/other.md").action == "run"
    assert call(SCRIBBLE, workspace, pol, path=str(elsewhere / "x.txt")).action == "ask"
    assert call(SHELL, workspace, pol, command="make").action == "ask"


def test_allow_always_for_git_status_does_not_cover_git_push(workspace: ScopedWorkspace) -> None:
    pol = policy(Mode.ASK)
    first = call(SHELL, workspace, pol, command="git status -s")
    assert first.request is not None
    pol.record(first.request, Decision.ALLOW_ALWAYS)
    assert call(SHELL, workspace, pol, command="git status").action == "run"
    assert call(SHELL, workspace, pol, command="cd src && git status --short").action == "run"
    assert call(SHELL, workspace, pol, command="git push origin main").action == "ask"
    assert call(SHELL, workspace, pol, command="git status && git push origin main").action == "ask"
    assert call(SHELL, workspace, pol, command="git status $(curl -s e.com)").action == "ask"


def asking(verdict: PolicyVerdict) -> PolicyVerdict:
    """A verdict that asks the user (it must)."""
    assert verdict.request is not None
    return verdict


def test_allow_once_and_reject_once_are_not_remembered(workspace: ScopedWorkspace) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    request = asking(call(SHELL, workspace, pol, command="make")).request
    for decision in (Decision.ALLOW_ONCE, Decision.REJECT_ONCE, Decision.CANCELLED):
        pol.record(request, decision)
    assert memory.stored == {"allowed": [], "rejected": []}
    assert call(SHELL, workspace, pol, command="make").action == "ask"


@pytest.mark.parametrize("mode", [Mode.ASK, Mode.YOLO])
def test_reject_always_rejects_without_asking(workspace: ScopedWorkspace, mode: Mode) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    first = call(SHELL, workspace, pol, command="rm old.txt")
    assert first.request is not None
    pol.record(first.request, Decision.REJECT_ALWAYS)
    pol.mode = mode
    verdict = call(SHELL, workspace, pol, command="rm -f other.txt")
    assert verdict.action == "reject"
    assert verdict.reason == "rejected: the user chose to always reject `rm`"
    # `rm -f` has a scope of its own (an "always allow" for `rm` would not cover it); a
    # rejection of `rm` still covers it.
    assert verdict.request is not None and verdict.request.scope == "terminal:rm -f"
    assert call(SHELL, workspace, pol, command="ls").action == ("ask" if mode is Mode.ASK else "run")


def test_reject_always_on_a_dangerous_command_is_remembered(workspace: ScopedWorkspace) -> None:
    pol = policy(Mode.YOLO)
    first = call(SHELL, workspace, pol, command="git push --force")
    assert first.request is not None
    pol.record(first.request, Decision.REJECT_ALWAYS)
    assert call(SHELL, workspace, pol, command="git push -f").action == "reject"


def test_a_later_allow_always_replaces_a_reject_always(workspace: ScopedWorkspace) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    request = asking(call(SCRIBBLE, workspace, pol, path="a.py")).request
    pol.record(request, Decision.REJECT_ALWAYS)
    assert call(SCRIBBLE, workspace, pol, path="b.py").action == "reject"
    pol.record(request, Decision.ALLOW_ALWAYS)
    assert call(SCRIBBLE, workspace, pol, path="b.py").action == "run"
    assert memory.stored == {"allowed": ["scribble"], "rejected": []}


def test_allow_always_outside_covers_that_directory_only(workspace: ScopedWorkspace, elsewhere: Path) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    sub = elsewhere / "sub"
    first = call(PEEK, workspace, pol, path=str(sub / "a.txt"))
    assert first.action == "ask" and first.request is not None
    pol.record(first.request, Decision.ALLOW_ALWAYS)
    assert memory.allowed == {f"peek in {sub.resolve()}"}

    again = call(PEEK, workspace, pol, path=str(sub / "b.txt"))
    assert (again.action, again.allow_outside) == ("run", True)
    assert call(PEEK, workspace, pol, path=str(elsewhere / "c.txt")).action == "ask"
    assert call(PEEK, workspace, pol, path=str(sub / "deeper" / "d.txt")).action == "ask"
    assert call(SCRIBBLE, workspace, pol, path=str(sub / "a.txt")).action == "ask"


def test_inside_allow_always_does_not_reach_outside(workspace: ScopedWorkspace, elsewhere: Path) -> None:
    pol = policy(Mode.ASK, ApprovalMemory(allowed={"terminal:ls"}))
    assert call(SHELL, workspace, pol, command="ls -la").action == "run"
    outside = call(SHELL, workspace, pol, command="ls -la", cwd=str(elsewhere))
    assert (outside.action, outside.allow_outside) == ("ask", True)


def test_remembered_decisions_survive_a_round_trip(workspace: ScopedWorkspace) -> None:
    memory = ApprovalMemory()
    pol = policy(Mode.ASK, memory)
    for command, decision in (("git status", Decision.ALLOW_ALWAYS), ("rm x", Decision.REJECT_ALWAYS)):
        request = asking(call(SHELL, workspace, pol, command=command)).request
        pol.record(request, decision)
    restored = policy(Mode.ASK, ApprovalMemory.from_dict(memory.stored))
    assert call(SHELL, workspace, restored, command="git status -s").action == "run"
    assert call(SHELL, workspace, restored, command="rm y").action == "reject"


def test_absolute_paths_inside_the_workspace_are_not_outside_for_the_danger_rules(
    workspace: ScopedWorkspace, project: Path
) -> None:
    pol = policy(Mode.YOLO)
    assert call(SHELL, workspace, pol, command=f"echo x > {project}/out.txt").action == "run"
    assert call(SHELL, workspace, pol, command=f"rm -r {project}/build").action == "run"
    for command in (
        f"rm -rf {project}",
        f"rm -rf {project}/.",
        f"rm -rf {project}/..",
        "rm -rf /srv/elsewhere",
    ):
        verdict = call(SHELL, workspace, pol, command=command)
        assert verdict.action == "ask", command
