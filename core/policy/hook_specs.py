"""The hooks a configuration declares (`[[hooks.<event>]]`), read without running any.

Apart from `hooks.py` (which runs them) so that the permission rules, which read a
project's hooks with its rules, need nothing of the runner.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

EVENTS = ("session_start", "prompt_submit", "pre_tool", "post_tool", "stop")


@dataclass(frozen=True, slots=True)
class HookSpec:
    event: str
    command: str
    source: str  # "your config.toml" or the project file
    matcher: str | None = None
    timeout: float = 60.0
    unconfined: bool = False  # outside the sandbox: the user's own config.toml only


def specs_from_table(table: Any, source: str, *, own: bool = False) -> list[HookSpec]:
    """`[[hooks.<event>]]` entries ({command, matcher?, timeout?, unconfined?}) as
    HookSpecs; `unconfined` counts only in the user's `own` config, never a project's."""
    specs: list[HookSpec] = []
    if not isinstance(table, dict):
        return specs
    for event, entries in table.items():
        if event not in EVENTS or not isinstance(entries, list):
            log.warning("%s: hooks.%s is not a known event with a list of hooks; ignored", source, event)
            continue
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
                log.warning("%s: a hooks.%s entry without a command; ignored", source, event)
                continue
            timeout = entry.get("timeout", 60.0)
            matcher = entry.get("matcher")
            specs.append(
                HookSpec(
                    event,
                    entry["command"],
                    source,
                    matcher if isinstance(matcher, str) else None,
                    float(timeout) if isinstance(timeout, int | float) and timeout > 0 else 60.0,
                    own and entry.get("unconfined") is True,
                )
            )
    return specs
