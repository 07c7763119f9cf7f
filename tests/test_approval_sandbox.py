"""The policy's part of the sandbox: mode auto, yolo still confined, leaving the sandbox
asks, an unavailable sandbox asks before every command; on the real terminal tool and a
real (probed) sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_acp.bridge.permissions import permission_params
from hermes_core.policy.approval import ApprovalMemory, ApprovalPolicy, Decision, Mode, PolicyVerdict
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.tools.files import WriteFileTool
from hermes_core.tools.terminal import TerminalTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope

TERMINAL, WRITE = TerminalTool(), WriteFileTool()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def workspace(project: Path, state: str) -> LocalWorkspace:
    scope = WorkspaceScope(project)
    if state == "off":
        return LocalWorkspace(scope, sandbox=Sandbox(scope, mode="off"))
    bwrap = str(project / "no-bwrap") if state == "unavailable" else None
    sandbox = Sandbox(scope, bwrap=bwrap)
    assert sandbox.confinement == state
    return LocalWorkspace(scope, sandbox=sandbox)


def check(
    mode: Mode, ws: LocalWorkspace, tool: Any = TERMINAL, memory: ApprovalMemory | None = None, **args: Any
) -> PolicyVerdict:
    policy = ApprovalPolicy(mode, memory if memory is not None else ApprovalMemory())
    return policy.check(tool, tool.parse(args), ws, call_id="c1")


@pytest.mark.parametrize(
    ("mode", "state", "action"),
    [
        (Mode.AUTO, "sandboxed", "run"),
        (Mode.AUTO, "off", "ask"),  # nothing confines it: auto asks
        (Mode.AUTO, "unavailable", "ask"),
        (Mode.YOLO, "sandboxed", "run"),
        (Mode.YOLO, "off", "run"),  # the user turned the sandbox off and chose yolo
        (Mode.YOLO, "unavailable", "ask"),  # never silently unconfined
        (Mode.ACCEPT_EDITS, "sandboxed", "ask"),
        (Mode.ASK, "sandboxed", "ask"),
        (Mode.PLAN, "sandboxed", "reject"),
    ],
)
def test_a_plain_command_per_mode_and_sandbox_state(
    project: Path, mode: Mode, state: str, action: str
) -> None:
    verdict = check(mode, workspace(project, state), command="pytest -x")
    assert verdict.action == action
    if action == "ask":
        assert verdict.request is not None
        assert verdict.request.sandbox == ("sandboxed" if state == "sandboxed" else "unconfined")
        if state == "unavailable":
            assert "sandbox cannot start" in verdict.request.reason and verdict.allow_outside


def test_auto_runs_edits_inside_and_asks_for_edits_outside(project: Path, tmp_path: Path) -> None:
    ws = workspace(project, "sandboxed")
    assert check(Mode.AUTO, ws, WRITE, path="a.py", content="x").action == "run"
    outside = check(Mode.AUTO, ws, WRITE, path=str(tmp_path / "b.py"), content="x")
    assert outside.action == "ask" and outside.request is not None
    assert outside.request.reason == "outside the workspace"


def test_dangerous_commands_still_ask_in_auto_and_yolo(project: Path) -> None:
    ws = workspace(project, "sandboxed")
    for mode in (Mode.AUTO, Mode.YOLO):
        verdict = check(mode, ws, command="rm -rf /")
        assert verdict.action == "ask" and verdict.request is not None and verdict.request.dangerous


@pytest.mark.parametrize("mode", [Mode.AUTO, Mode.YOLO, Mode.ACCEPT_EDITS])
def test_the_model_cannot_leave_the_sandbox_without_the_user(project: Path, mode: Mode) -> None:
    ws = workspace(project, "sandboxed")
    verdict = check(mode, ws, command="npm install", unconfined=True)
    assert verdict.action == "ask" and verdict.allow_outside
    request = verdict.request
    assert request is not None and request.sandbox == "unconfined"
    assert request.reason.startswith("runs outside the sandbox")
    assert request.scope == "terminal:npm install outside the sandbox"
    card = permission_params("s1", request)
    assert card["toolCall"]["title"] == "Run outside the sandbox: npm install (runs outside the sandbox)"
    assert card["_meta"]["hermes"]["sandboxed"] is False


def test_always_outside_the_sandbox_covers_that_command_scope_only(project: Path) -> None:
    ws = workspace(project, "sandboxed")
    memory = ApprovalMemory()
    policy = ApprovalPolicy(Mode.AUTO, memory)
    first = policy.check(
        TERMINAL, TERMINAL.parse({"command": "curl example.com", "unconfined": True}), ws, call_id="1"
    )
    assert first.request is not None and first.request.offers_always
    policy.record(first.request, Decision.ALLOW_ALWAYS)
    again = policy.check(
        TERMINAL, TERMINAL.parse({"command": "curl -s example.com/x", "unconfined": True}), ws, call_id="2"
    )
    assert again.action == "run" and again.allow_outside
    other = policy.check(
        TERMINAL, TERMINAL.parse({"command": "wget example.com", "unconfined": True}), ws, call_id="3"
    )
    assert other.action == "ask"
    # The always answer to leave the sandbox does not make `curl` skip asking in ask mode
    # (a different question), and the sandboxed run stays sandboxed.
    plain = ApprovalPolicy(Mode.ASK, memory).check(
        TERMINAL, TERMINAL.parse({"command": "curl example.com"}), ws, call_id="4"
    )
    assert plain.action == "ask" and not plain.allow_outside


def test_no_always_outside_the_sandbox_for_what_runs_the_workspaces_code(project: Path) -> None:
    # `npm install` runs the package.json's lifecycle scripts, which the model can rewrite.
    policy = ApprovalPolicy(Mode.AUTO, ApprovalMemory())
    args = TERMINAL.parse({"command": "npm install", "unconfined": True})
    first = policy.check(TERMINAL, args, workspace(project, "sandboxed"), call_id="1")
    assert first.request is not None and not first.request.offers_always
    card = permission_params("s1", first.request)
    assert "allow_always" not in {o["optionId"] for o in card["options"]}
    policy.record(first.request, Decision.ALLOW_ALWAYS)
    assert policy.check(TERMINAL, args, workspace(project, "sandboxed"), call_id="2").action == "ask"


def test_the_card_says_a_command_runs_sandboxed(project: Path) -> None:
    verdict = check(Mode.ASK, workspace(project, "sandboxed"), command="make")
    assert verdict.request is not None
    card = permission_params("s1", verdict.request)
    assert card["toolCall"]["title"] == "Run: make (sandboxed)"
    assert card["_meta"]["hermes"]["sandboxed"] is True
    edit = check(Mode.ASK, workspace(project, "sandboxed"), WRITE, path="a.py", content="x")
    assert (
        edit.request is not None
        and "sandboxed" not in permission_params("s1", edit.request)["_meta"]["hermes"]
    )
