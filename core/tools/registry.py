"""The set of tools a session offers, and name repair for the model's typos."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

from hermes_core.providers.base import ToolSpec
from hermes_core.tools.base import Tool


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def closest(self, name: str) -> Tool | None:
        """The registered tool a misspelled name most likely meant, if any is close."""
        normalized = name.strip().lower().replace("-", "_").replace(" ", "_")
        if normalized in self._tools:
            return self._tools[normalized]
        match = difflib.get_close_matches(normalized, list(self._tools), n=1, cutoff=0.75)
        return self._tools[match[0]] if match else None

    def specs(self, *, read_only: bool = False) -> list[ToolSpec]:
        """The tool list sent to the model (the agent keeps it for the session: prompt caches
        key on it, and schema generation is not free)."""
        return [t.spec() for t in self._tools.values() if t.read_only or not read_only]
