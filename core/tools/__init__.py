"""Built-in tools. `default_tools()` is the set every session starts with; other tool
families (memory, MCP) are added by whoever builds the session."""

from __future__ import annotations

from core.tools.base import Tool
from core.tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from core.tools.patch import PatchTool
from core.tools.search import SearchTool, find_rg
from core.tools.terminal import ProcessTool, TerminalTool
from core.tools.todo import TodoTool

__all__ = ["default_tools", "find_rg"]


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
