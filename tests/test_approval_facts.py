"""The approval policy reads what a tool declares about a call (`Tool.approval_facts`), not
what its arguments happen to be called, and reads a call's command line once for every
question it asks of it (danger rules, "always" scope, the files an "always" is bound to,
permission rules). Real tools, a real sandbox setting and real temp dirs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from hermes_core.events import ToolKind
from hermes_core.policy.approval import ApprovalMemory, ApprovalPolicy, Mode
from hermes_core.policy.permission_rules import PermissionRules
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.shell import parse
from hermes_core.shell.parse import CommandLine
from hermes_core.tools.base import ApprovalFacts, Tool, ToolContext, ToolResult
from hermes_core.tools.terminal import TerminalTool
from hermes_core.workspace import LocalWorkspace, Workspace, WorkspaceScope


class ScriptArgs(BaseModel):
    script: str  # not called `command`: nothing is guessed from a field's name
    outside: bool = False


class ScriptTool(Tool[ScriptArgs]):
    """Run a script line (a tool of someone else's, declaring what it runs)."""

    name = "run_script"
    kind: ToolKind = "execute"
    needs_approval = True
    read_only = False

    def title(self, args: ScriptArgs, workspace: Workspace) -> str:
        return f"Run {args.script}"

    def approval_facts(self, args: ScriptArgs) -> ApprovalFacts:
        return ApprovalFacts(command=CommandLine.read(args.script), unconfined=args.outside)

    async def run(self, args: ScriptArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult("not run here")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "build.py").write_text("print('built')\n")
    return root


def test_a_declared_command_meets_the_danger_rules_whatever_its_field_is_called(project: Path) -> None:
    workspace = LocalWorkspace(WorkspaceScope(project))  # no sandbox: as with it off
    policy = ApprovalPolicy(Mode.YOLO, ApprovalMemory())
    tool = ScriptTool()
    verdict = policy.check(tool, tool.parse({"script": "rm -rf /"}), workspace, call_id="c1")
    assert verdict.action == "ask"
    assert verdict.request is not None and verdict.request.rule is not None
    assert "rm -rf /" in verdict.request.rule or "broad path" in verdict.request.rule
    harmless = policy.check(tool, tool.parse({"script": "ls"}), workspace, call_id="c2")
    assert harmless.action == "run"
    # "Always" for it is keyed by the command's program, as for the terminal.
    asked = ApprovalPolicy(Mode.ASK, ApprovalMemory()).check(
        tool, tool.parse({"script": "git status -s"}), workspace, call_id="c3"
    )
    assert asked.request is not None and asked.request.scope == "run_script:git status"


def test_a_declared_wish_to_leave_the_sandbox_asks_in_yolo(project: Path) -> None:
    scope = WorkspaceScope(project)
    sandbox = Sandbox(scope, bwrap=str(project / "no-bwrap"))  # cannot start: commands ask
    workspace = LocalWorkspace(scope, sandbox=sandbox)
    tool = ScriptTool()
    verdict = ApprovalPolicy(Mode.YOLO, ApprovalMemory()).check(
        tool, tool.parse({"script": "ls", "outside": True}), workspace, call_id="c1"
    )
    assert verdict.action == "ask" and verdict.allow_outside
    assert verdict.request is not None and verdict.request.sandbox == "unconfined"


def test_each_command_line_is_read_once_per_call(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One call asked about by every rule that looks at a command: the danger rules, its
    "always" scope, the pin of an unconfined run on `build.py`, and a permission rule."""
    command = "python3 build.py --fast"
    read: list[str] = []
    tokenize = parse.tokenize

    def counting(source: str) -> list[parse.Word | parse.Operator]:
        read.append(source)
        return tokenize(source)

    monkeypatch.setattr(parse, "tokenize", counting)
    scope = WorkspaceScope(project)
    workspace = LocalWorkspace(scope, sandbox=Sandbox(scope, bwrap=str(project / "no-bwrap")))
    rules = PermissionRules.load(project.parent / "home", project, {"ask": ["Bash(python3 build.py:*)"]})
    policy = ApprovalPolicy(Mode.AUTO, ApprovalMemory(), rules)
    tool = TerminalTool()
    verdict = policy.check(
        tool, tool.parse({"command": command, "unconfined": True}), workspace, call_id="c1"
    )
    assert verdict.action == "ask"
    assert verdict.request is not None
    assert verdict.request.scope.startswith("terminal:python3 build.py outside the sandbox, while build.py")
    assert read.count(command) == 1
