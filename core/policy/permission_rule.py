"""One permission rule (`Bash(npm run test:*)`, `Edit(src/**)`, `mcp__server__tool`) as
read from a rules table, and whether it covers a tool call; the rules' syntax is in
permission_rules.py, what a pattern matches in rule_matching.py."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.fence.wildmatch import PathGlob
from hermes_core.policy.rule_matching import Action, command_matches, mcp_covers, path_pattern, paths_match

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hermes_core.tools.base import ApprovalFacts, Tool
    from hermes_core.workspace import Workspace

log = logging.getLogger(__name__)

ACTIONS: tuple[Action, ...] = ("deny", "ask", "allow")

# Claude Code's tool names -> the families of ours they cover.
_FAMILIES: dict[str, str] = {
    "bash": "Bash",
    "edit": "Edit",
    "write": "Edit",
    "multiedit": "Edit",
    "notebookedit": "Edit",
    "read": "Read",
    "grep": "Read",
    "glob": "Read",
    "ls": "Read",
}
_TOOL_FAMILIES: dict[str, str] = {
    "terminal": "Bash",
    "write_file": "Edit",
    "patch": "Edit",
    "read_file": "Read",
    "list_files": "Read",
    "search": "Read",
}
# `mcp__server__*` ends its name with a star: without it that rule, the README's own
# spelling, was "cannot be read; ignored", a deny among them.
_RULE = re.compile(r"\s*([A-Za-z_][\w-]*(?:__\*)?)\s*(?:\((.*)\))?\s*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    text: str  # as written
    action: Action
    source: str  # where it was written, for the user and the model
    family: str  # "Bash", "Edit", "Read", or a tool's own name (mcp__… included)
    specifier: str | None
    base: Path  # what relative paths are relative to

    def covers(
        self, tool: Tool[Any], args: BaseModel, workspace: Workspace, facts: ApprovalFacts | None = None
    ) -> bool:
        """Whether the rule names this call. `facts` are the tool's `approval_facts` when the
        caller has them already (the command line read once)."""
        family = _TOOL_FAMILIES.get(tool.name, tool.name)
        if family.startswith("mcp__") or self.family.startswith("mcp__"):
            return mcp_covers(self.family, tool.name, getattr(tool, "server_key", None))
        if family != self.family:
            return False
        if self.specifier is None or self.specifier in ("", "*"):
            return True
        if family == "Bash":
            command = (facts if facts is not None else tool.approval_facts(args)).command
            return command is not None and command_matches(self.specifier, command, self.action)
        if family in ("Edit", "Read"):
            return paths_match(self._path_pattern(), tool, args, workspace, self.action)
        return False

    def _path_pattern(self) -> PathGlob:
        return path_pattern(self.specifier or "", self.base)


@dataclass(frozen=True, slots=True)
class RuleMatch:
    action: Action
    rule: Rule

    def model_reason(self) -> str:
        return (
            f"rejected: the permission rule `{self.rule.text}` ({self.rule.source}) denies this call. "
            "Do not try to reach the same result another way; tell the user what you needed."
        )

    def user_reason(self) -> str:
        return f"the permission rule `{self.rule.text}` ({self.rule.source}) asks"


def parse_rule(text: str, action: Action, source: str, base: Path) -> Rule | None:
    match = _RULE.fullmatch(text)
    if match is None:
        return None
    name, specifier = match.group(1), match.group(2)
    family = name if name.startswith("mcp__") else _FAMILIES.get(name.lower(), name)
    return Rule(
        text.strip(), action, source, family, specifier.strip() if specifier is not None else None, base
    )


def rules_of(table: Any, source: str, base: Path) -> list[Rule]:
    rules: list[Rule] = []
    if not isinstance(table, dict):
        return rules
    for action in ACTIONS:
        entries = table.get(action) or []
        if not isinstance(entries, list):
            log.warning("%s: permissions.%s is not a list; ignored", source, action)
            continue
        for text in entries:
            rule = parse_rule(text, action, source, base) if isinstance(text, str) else None
            if rule is None:
                log.warning("%s: permission rule %r cannot be read; ignored", source, text)
                continue
            rules.append(rule)
    return rules


def covers_safely(
    rule: Rule, tool: Tool[Any], args: BaseModel, workspace: Workspace, facts: ApprovalFacts
) -> bool:
    try:
        return rule.covers(tool, args, workspace, facts)
    except Exception:  # a rule that cannot be judged: it covers for deny and ask, never for allow
        log.debug("permission rule %r could not be applied", rule.text, exc_info=True)
        return rule.action != "allow"
