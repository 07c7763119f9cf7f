"""Built-in tools. `default_tools()` is the set every session starts with; other tool
families (memory, MCP) are added by whoever builds the session."""

from __future__ import annotations

from hermes_core.tools.base import Tool
from hermes_core.tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from hermes_core.tools.patch import PatchTool
from hermes_core.tools.search import SearchTool
from hermes_core.tools.terminal import ProcessTool, TerminalTool
from hermes_core.tools.todo import TodoTool

__all__ = ["default_tools"]


def default_tools() -> list[Tool]:
    return [
        ReadFileTool(),
        WriteFileTool(),
        PatchTool(),
        ListFilesTool(),
        SearchTool(),
        TerminalTool(),
        ProcessTool(),
        TodoTool(),
    ]
