"""Where permission rules are kept: a project's rule files (read without following a link
or blocking on a FIFO, hashed so that trust binds their content), the agent's own JSON
stores (the trusted digests, "always in this project"), and the files as `/permissions`
shows them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_core.policy.hook_specs import HookSpec
from hermes_core.policy.permission_rule import ACTIONS, Rule
from hermes_core.shell.shown import code_span

log = logging.getLogger(__name__)

PROJECT_FILES = (".hermes/config.toml", ".claude/settings.json", ".claude/settings.local.json")


@dataclass(slots=True)
class RuleFile:
    """One file's rules, and whether its allow rules apply."""

    label: str
    path: Path | None  # None: the user's config.toml (read by Settings)
    rules: list[Rule]
    digest: str = ""
    trusted: bool = True  # the user's own; a project file's once the user trusted its content
    hooks: list[HookSpec] = field(default_factory=list)  # its hooks (core/policy/hooks.py), run once trusted

    @property
    def allow_rules(self) -> list[Rule]:
        return [r for r in self.rules if r.action == "allow"]


def read_project_file(path: Path) -> tuple[dict[str, Any], str] | None:
    """A project file's content (an empty table when it has none) and the hash of its bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not _regular(handle.fileno()):
            return None
        data = handle.read(1_000_000)
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
        parsed = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    # RecursionError: `[[[[…` a hundred thousand deep, which a cloned repository may hold, made
    # every session in it fail to start.
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        log.warning("%s cannot be read (%s); its rules are ignored", path, exc)
        return None
    return (parsed if isinstance(parsed, dict) else {}), digest


def _regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def describe(files: Iterable[RuleFile]) -> list[str]:
    """The rules as `/permissions` shows them, source by source."""
    lines: list[str] = []
    for rule_file in files:
        if not rule_file.rules and not rule_file.hooks:
            continue
        untrusted = not rule_file.trusted and (rule_file.allow_rules or rule_file.hooks)
        state = " — allow rules and hooks not trusted yet" if untrusted else ""
        lines.append(f"**{rule_file.label}**{state}")
        for action in ACTIONS:
            texts = [r.text for r in rule_file.rules if r.action == action]
            if texts:
                lines.append(f"- {action}: " + ", ".join(code_span(t) for t in texts))
        for hook in rule_file.hooks:
            matcher = f" ({code_span(hook.matcher)})" if hook.matcher else ""
            lines.append(f"- hook {hook.event}{matcher}: {code_span(hook.command)}")
    return lines
