"""Permission rules in Claude Code's syntax, from the user and from the project.

    Bash(npm run test:*)   a command starting with `npm run test` (a word boundary after it)
    Bash(git status)       exactly that command
    Bash                   any command
    Edit(src/**)           edits under src/ (write_file, patch); Write(…) is the same
    Read(~/.aws/**)        reads (read_file, list_files, search) under ~/.aws
    mcp__server__tool      one MCP tool; `mcp__server` or `mcp__server__*` all of a server's
    delegate_task          any other tool by its name

Path patterns: `//abs/path` absolute, `~/…` in the home directory, `/…` from the project's
directory, anything else from the working directory; a pattern without a slash (`*.env`)
matches that name in any directory. `*` stays within a directory, `**` crosses them.

Sources: `[permissions]` in the user's config.toml, the project's `.hermes/config.toml`,
`.claude/settings.json` and `.claude/settings.local.json`. Deny beats ask beats allow,
whatever the source. A project's files are the repository's, so the attacker's: their
deny and ask rules always apply (they only tighten), their allow rules only once the user
trusted that file's content (`/permissions trust`; a changed file is untrusted again).

A command matches an allow rule only when it can be read and every simple command in it
(`a && b`, `a | b`) matches one, with nothing the shell computes (`$(…)`) and no output
redirected into a file; it matches a
deny or ask rule when any program it runs does, wrappers (`sudo`, `env`, `timeout`)
taken off. The danger rules and the sandbox stay above: an allow rule only replaces a
question the mode would have asked, never one about a dangerous command, a path outside
the workspace or leaving the sandbox.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.policy.hook_specs import HookSpec, specs_from_table
from hermes_core.policy.permission_rule import ACTIONS, Rule, RuleMatch, covers_safely, parse_rule, rules_of
from hermes_core.policy.rule_files import (
    PROJECT_FILES,
    RuleFile,
    describe,
    read_json,
    read_project_file,
    write_json,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hermes_core.fence.wildmatch import PathGlob
    from hermes_core.tools.base import ApprovalFacts, Tool
    from hermes_core.workspace import Workspace

# What callers import from here, wherever it is defined now.
__all__ = [
    "ACTIONS",
    "PROJECT_FILES",
    "PermissionRules",
    "Rule",
    "RuleFile",
    "RuleMatch",
    "describe",
    "parse_rule",
]


@dataclass(slots=True)
class PermissionRules:
    """A session's rules and the "always in this project" answers kept in the agent's home."""

    home: Path
    cwd: Path
    files: list[RuleFile] = field(default_factory=list)
    project_allowed: set[str] = field(default_factory=set)
    user_hooks: list[HookSpec] = field(default_factory=list)
    # The untrusted files as the user last saw them listed (path -> digest): `trust` takes
    # only these, so a file rewritten between the listing and the answer is not trusted.
    shown: dict[Path, str] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        home: Path,
        cwd: str | Path,
        user_table: dict[str, list[str]] | None,
        user_hooks: list[HookSpec] | None = None,
    ) -> PermissionRules:
        rules = cls(home, Path(os.path.realpath(cwd)), user_hooks=list(user_hooks or []))
        rules.reload(user_table)
        return rules

    def hook_specs(self) -> list[HookSpec]:
        """The user's hooks, then those of the project files the user trusted."""
        return [*self.user_hooks, *(h for f in self.files if f.trusted for h in f.hooks)]

    def reload(self, user_table: dict[str, list[str]] | None = None) -> None:
        files = [f for f in self.files if f.path is None]
        if user_table is not None:
            files = [RuleFile("your config.toml", None, rules_of(user_table, "your config.toml", self.cwd))]
        trust = self._trust_store()
        for relative in PROJECT_FILES:
            path = self.cwd / relative
            found = read_project_file(path)
            if found is None:
                continue
            parsed, digest = found
            rules = rules_of(parsed.get("permissions"), relative, self.cwd)
            rule_file = RuleFile(relative, path, rules, digest, trust.get(str(path)) == digest)
            if path.suffix == ".toml":
                rule_file.hooks = specs_from_table(parsed.get("hooks"), relative)
            files.append(rule_file)
        self.files = files
        self.project_allowed = set(self._project_store().get("allowed", []))

    def match(
        self, tool: Tool[Any], args: BaseModel, workspace: Workspace, facts: ApprovalFacts | None = None
    ) -> RuleMatch | None:
        """The strongest rule covering the call: deny, then ask, then a trusted allow."""
        facts = facts if facts is not None else tool.approval_facts(args)
        for action in ACTIONS:
            for rule_file in self.files:
                if action == "allow" and not rule_file.trusted:
                    continue
                for rule in rule_file.rules:
                    if rule.action == action and covers_safely(rule, tool, args, workspace, facts):
                        return RuleMatch(action, rule)
        return None

    def read_guard(self, path: str) -> str | None:
        """`guarding_read(path)` as the model reads it: the rule and where it is written."""
        rule = self.guarding_read(path)
        return None if rule is None else f"`{rule.text}` ({rule.source})"

    def guarding_read(self, path: str | Path) -> Rule | None:
        """The deny or ask `Read(…)` rule covering the file at `path` (absolute), by its
        spelling or where it resolves to. A rule covers a call by the path it names, and
        `search` or `list_files` over a folder names the folder: what they found inside it
        is checked file by file with this (and left out: a search cannot ask per file)."""
        lexical = str(path)
        real: str | None = None
        for action in ("deny", "ask"):
            for rule_file in self.files:
                for rule in rule_file.rules:
                    if rule.action != action or rule.family != "Read":
                        continue
                    if rule.specifier is None or rule.specifier in ("", "*"):
                        return rule
                    pattern = rule._path_pattern()
                    if pattern.fullmatch(lexical):
                        return rule
                    real = real if real is not None else os.path.realpath(lexical)
                    if pattern.fullmatch(real):
                        return rule
        return None

    def denied_folders(self) -> list[Path]:
        """The folders a deny `Read(…)` rule walls off whole (`Read(secrets/**)`,
        `Read(//srv/keys/)`), as they are now: the sandbox hides them from commands too, or
        `cat secrets/x` in auto read what `read_file` may not. A pattern that names only
        some files (`Read(**/*.pem)`, `Read(secrets/*.txt)`) guards the file tools alone."""
        folders: list[Path] = []
        for rule_file in self.files:
            for rule in rule_file.rules:
                if rule.action == "deny" and rule.family == "Read" and rule.specifier:
                    folder = _whole_folder(rule.specifier, rule.base)
                    if folder is not None and folder.is_dir():
                        folders.append(folder.resolve())
        return folders

    def edit_guarded(self) -> list[tuple[Path, str, bool]]:
        """The paths a deny or ask `Edit(…)` rule names whole: (path, the rule and where it
        is written, whether a folder). The sandbox keeps them read-only for commands, or a
        sandboxed `echo x > secrets/a` wrote what `write_file` may not. A pattern with a
        wildcard in it (`Edit(**/*.pem)`) names no path: `edit_patterns` has those."""
        guarded: list[tuple[Path, str, bool]] = []
        for rule_file in self.files:
            for rule in rule_file.rules:
                if rule.action not in ("deny", "ask") or rule.family != "Edit" or not rule.specifier:
                    continue
                folder = _whole_folder(rule.specifier, rule.base)
                path = folder if folder is not None else _one_file(rule.specifier, rule.base)
                if path is not None:
                    guarded.append(
                        (Path(os.path.abspath(path)), f"`{rule.text}` ({rule.source})", folder is not None)
                    )
        return guarded

    def edit_patterns(self) -> list[tuple[PathGlob, str]]:
        """The deny and ask `Edit(…)` rules that name files by a wildcard (`Edit(**/*.pem)`,
        `Edit(src/*.rs)`), and those naming one name at any depth (`Edit(.env.prod)`,
        `Edit(secrets/)`: `edit_guarded` has the root's): (their pattern, the rule and where
        it is written), for the sandbox to keep what they match read-only
        (`sandbox/edit_globs.py`). A bare `Edit` or `Edit(*)` (every edit) is not among them."""
        patterns: list[tuple[PathGlob, str]] = []
        for rule_file in self.files:
            for rule in rule_file.rules:
                if rule.action not in ("deny", "ask") or rule.family != "Edit":
                    continue
                spec = (rule.specifier or "").strip()
                whole = _whole_folder(spec, rule.base) or _one_file(spec, rule.base)
                any_depth = "/" not in spec.removeprefix("./").rstrip("/") and not spec.startswith("~")
                if spec in ("", "*") or (whole and not any_depth):
                    continue
                patterns.append((rule._path_pattern(), f"`{rule.text}` ({rule.source})"))
        return patterns

    def waiting_allow(
        self, tool: Tool[Any], args: BaseModel, workspace: Workspace, facts: ApprovalFacts | None = None
    ) -> Rule | None:
        """An allow rule of a project file not trusted yet that covers the call: the question
        names it, so the user learns that the file waits for `/permissions trust` (again,
        after it changed) instead of being asked as if it said nothing."""
        facts = facts if facts is not None else tool.approval_facts(args)
        for rule_file in self.files:
            if rule_file.trusted:
                continue
            for rule in rule_file.allow_rules:
                if rule.action == "allow" and covers_safely(rule, tool, args, workspace, facts):
                    return rule
        return None

    def untrusted(self) -> list[RuleFile]:
        return [f for f in self.files if not f.trusted and (f.allow_rules or f.hooks)]

    def show_untrusted(self) -> list[RuleFile]:
        """The untrusted files, remembered as shown to the user (what `trust` may take)."""
        waiting = self.untrusted()
        self.shown = {f.path: f.digest for f in waiting if f.path is not None}
        return waiting

    def unseen(self) -> list[RuleFile]:
        """The untrusted files whose content the user has not seen listed as it is now."""
        return [f for f in self.untrusted() if f.path is None or self.shown.get(f.path) != f.digest]

    def trust(self) -> list[RuleFile]:
        """Trust the project files whose current content the user saw listed; the files
        trusted now."""
        newly = [f for f in self.untrusted() if f.path is not None and self.shown.get(f.path) == f.digest]
        if not newly:
            return []
        store = self._trust_store()
        for rule_file in newly:
            store[str(rule_file.path)] = rule_file.digest
            rule_file.trusted = True
        write_json(self.home / "trusted_rules.json", store)
        return newly

    # -- "Always allow … in this project" ----------------------------------------------

    def allow_in_project(self, scope: str) -> None:
        self.project_allowed.add(scope)
        self._save_project()

    def revoke(self, scope: str) -> bool:
        if scope not in self.project_allowed:
            return False
        self.project_allowed.discard(scope)
        self._save_project()
        return True

    def _project_path(self) -> Path:
        key = hashlib.sha256(str(self.cwd).encode()).hexdigest()[:24]
        return self.home / "permissions" / f"{key}.json"

    def _project_store(self) -> dict[str, Any]:
        return read_json(self._project_path())

    def _save_project(self) -> None:
        write_json(self._project_path(), {"project": str(self.cwd), "allowed": sorted(self.project_allowed)})

    def _trust_store(self) -> dict[str, str]:
        return {k: v for k, v in read_json(self.home / "trusted_rules.json").items() if isinstance(v, str)}


# -- the paths a rule names whole ---------------------------------------------------


def _whole_folder(specifier: str, base: Path) -> Path | None:
    """The folder a path pattern covers entirely (`dir/**`, `dir/`), or None."""
    spec = specifier.strip()
    if spec.endswith("/**"):
        spec = spec[:-3]
    elif spec.endswith("/"):
        spec = spec.rstrip("/")
    else:
        return None
    if not spec or any(c in spec for c in "*?["):
        return None
    if spec.startswith("//"):
        return Path(spec[1:])
    if spec == "~" or spec.startswith("~/"):
        return Path.home() / spec[2:]
    return base / spec.lstrip("/").removeprefix("./")


def _one_file(specifier: str, base: Path) -> Path | None:
    """The one file a path pattern without wildcards names (`config/prod.yml`), or None."""
    spec = specifier.strip()
    if not spec or spec.endswith("/") or any(c in spec for c in "*?[{"):
        return None
    return _whole_folder(spec + "/", base)
