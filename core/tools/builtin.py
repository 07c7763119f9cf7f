"""The built-in tools every session starts with; other tool families (memory, MCP,
clarify, delegation) are added by whoever builds the session."""

from __future__ import annotations

from hermes_core.tools.base import Tool
from hermes_core.tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from hermes_core.tools.patch import PatchTool
from hermes_core.tools.search import SearchTool
from hermes_core.tools.terminal import ProcessTool, TerminalTool
from hermes_core.tools.todo import TodoTool


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
