"""Permission rules on the real tools: the syntax, commands read the way bash will (allow
needs every part, deny catches any part, wrappers and spellings), paths (relative,
home, absolute, a link out of an allowed directory), MCP names, and the order of actions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hermes_core.policy.permission_rules import PermissionRules
from hermes_core.tools.files import ReadFileTool, WriteFileTool
from hermes_core.tools.patch import PatchTool
from hermes_core.tools.terminal import TerminalTool
from hermes_core.workspace import LocalWorkspace, WorkspaceScope


@pytest.fixture
def workspace(tmp_path: Path) -> LocalWorkspace:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    return LocalWorkspace(WorkspaceScope(root))


def rules_of(workspace: LocalWorkspace, tmp_path: Path, **table: list[str]) -> PermissionRules:
    return PermissionRules.load(tmp_path / "home", workspace.scope.cwd, table)


def action(rules: PermissionRules, workspace: LocalWorkspace, tool: Any, **arguments: Any) -> str | None:
    found = rules.match(tool, tool.parse(arguments), workspace)
    return found.action if found is not None else None


def command(rules: PermissionRules, workspace: LocalWorkspace, text: str) -> str | None:
    return action(rules, workspace, TerminalTool(), command=text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("npm run test", "allow"),
        ("npm run test:unit -- --watch", None),  # `test:unit` is another word than `test`
        ("npm run test -- --watch", "allow"),
        ("npm run testing", None),
        ("npm run test && npm run build", None),  # every part must fit
        ("npm run test | tee out.log", None),
        ("npm run test > out.log", None),
        ("npm run test 2>&1", "allow"),
        ("npm run test $(rm -rf src)", None),
        ("FOO=1 npm run test", None),
        ("git status", "allow"),
        ("git status --short", None),  # exact
    ],
)
def test_allow_covers_a_command_only_whole(workspace, tmp_path, text, expected):
    rules = rules_of(workspace, tmp_path, allow=["Bash(npm run test:*)", "Bash(git status)"])
    assert command(rules, workspace, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "git push origin main",
        "git status && git push",
        "sudo git push",
        "env GIT_TRACE=1 git push",
        "timeout 5 git push",
        "bash -c 'git push'",
        "echo $(git push)",
        "/usr/bin/git push",
        "git  push",
        "git push 'unterminated",  # unreadable: the text still starts with the rule's
    ],
)
def test_deny_catches_any_part_however_spelt(workspace, tmp_path, text):
    rules = rules_of(workspace, tmp_path, deny=["Bash(git push:*)"], allow=["Bash"])
    assert command(rules, workspace, text) == "deny"


def test_deny_beats_ask_beats_allow(workspace, tmp_path):
    rules = rules_of(
        workspace, tmp_path, allow=["Bash(make:*)"], ask=["Bash(make deploy:*)"], deny=["Bash(make nuke)"]
    )
    assert command(rules, workspace, "make build") == "allow"
    assert command(rules, workspace, "make deploy prod") == "ask"
    assert command(rules, workspace, "make nuke") == "deny"


def test_paths_relative_home_and_absolute(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    rules = rules_of(
        workspace,
        tmp_path,
        allow=["Edit(src/**)"],
        deny=["Read(~/.aws/**)", "Edit(//etc/**)", "Read(*.pem)"],
    )
    write = WriteFileTool()
    assert action(rules, workspace, write, path="src/app.py", content="") == "allow"
    assert action(rules, workspace, write, path="./src/deep/er.py", content="") == "allow"
    assert action(rules, workspace, write, path="README.md", content="") is None
    assert action(rules, workspace, PatchTool(), path="src/a.py", old_text="a", new_text="b") == "allow"
    assert action(rules, workspace, write, path="/etc/hosts", content="") == "deny"
    read = ReadFileTool()
    assert action(rules, workspace, read, path=str(tmp_path / "me" / ".aws" / "credentials")) == "deny"
    assert action(rules, workspace, read, path="keys/server.pem") == "deny"
    assert action(rules, workspace, read, path="src/app.py") is None


def test_a_link_out_of_an_allowed_directory_is_not_allowed_and_is_denied(workspace, tmp_path):
    outside = tmp_path / "secret"
    outside.mkdir()
    os.symlink(outside, workspace.scope.cwd / "src" / "link")
    rules = rules_of(workspace, tmp_path, allow=["Edit(src/**)"], deny=[f"Edit(/{outside}/**)"])
    assert action(rules, workspace, WriteFileTool(), path="src/link/x", content="") == "deny"
    allow_only = rules_of(workspace, tmp_path, allow=["Edit(src/**)"])
    assert action(allow_only, workspace, WriteFileTool(), path="src/link/x", content="") is None


def test_mcp_rules_name_a_tool_or_a_server():
    from hermes_core.policy.rule_matching import mcp_covers

    assert mcp_covers("mcp__github__create_issue", "mcp__github__create_issue")
    assert mcp_covers("mcp__github", "mcp__github__create_issue")
    assert mcp_covers("mcp__github__*", "mcp__github__create_issue")
    assert not mcp_covers("mcp__git", "mcp__github__create_issue")
    assert not mcp_covers("mcp__github__create", "mcp__github__create_issue")


def test_a_project_allow_rule_waits_for_trust_and_a_change_untrusts_it(workspace, tmp_path):
    settings = workspace.scope.cwd / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": ["Bash(ls)"], "deny": ["Bash(rm:*)"]}}')
    rules = rules_of(workspace, tmp_path)
    assert command(rules, workspace, "ls") is None
    assert command(rules, workspace, "rm x") == "deny"  # a repository may tighten at once
    assert rules.trust() == []  # not shown to the user yet
    rules.show_untrusted()
    assert [f.label for f in rules.trust()] == [".claude/settings.json"]
    assert command(rules_of(workspace, tmp_path), workspace, "ls") == "allow"  # kept in the home
    settings.write_text('{"permissions": {"allow": ["Bash(ls)", "Bash"]}}')
    assert command(rules_of(workspace, tmp_path), workspace, "ls") is None
