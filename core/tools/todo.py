"""The `todo` tool: the agent's plan for the task, shown in the editor."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hermes_core.events import PlanEntry, PlanUpdated, ToolKind
from hermes_core.providers.base import ToolSpec
from hermes_core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace

_MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


class TodoItem(ToolArgs):
    content: str = Field(min_length=1, description="The step, in a few words.")
    status: Literal["pending", "in_progress", "completed"] = Field(
        default="pending", description="Mark one step in_progress while working on it."
    )
    priority: Literal["high", "medium", "low"] = "medium"


class TodoArgs(ToolArgs):
    items: list[TodoItem] = Field(description="The whole plan, in order; replaces the previous one.")


class TodoTool(Tool[TodoArgs]):
    """Keep a plan for a multi-step task, shown to the user. Send the complete list every time (it
    replaces the previous one); update statuses as you go. Skip it for one-step tasks."""

    name = "todo"
    kind: ToolKind = "think"

    def make_spec(self) -> ToolSpec:
        # Inline the item schema: some OpenAI-compatible servers (llama.cpp, older vLLM)
        # do not follow $ref.
        spec = super().make_spec()
        parameters = dict(spec.parameters)
        definitions = parameters.pop("$defs", {})
        return ToolSpec(spec.name, spec.description, _inline(parameters, definitions))

    def title(self, args: TodoArgs, workspace: Workspace) -> str:
        done = sum(item.status == "completed" for item in args.items)
        return f"Update plan ({done}/{len(args.items)} done)"

    async def run(self, args: TodoArgs, ctx: ToolContext) -> ToolResult:
        entries = tuple(PlanEntry(item.content, item.status, item.priority) for item in args.items)
        ctx.state.plan = entries
        ctx.emit(PlanUpdated(entries))
        # The plan update shows the plan; the card repeating it as text would show it twice.
        return ToolResult(render_plan(entries), shown="")


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(definitions[ref.removeprefix("#/$defs/")], definitions)
        return {key: _inline(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    return node


def render_plan(entries: tuple[PlanEntry, ...]) -> str:
    if not entries:
        return "The plan is now empty."
    done = sum(entry.status == "completed" for entry in entries)
    lines = [f"Plan ({done}/{len(entries)} completed):"]
    for entry in entries:
        priority = f" ({entry.priority} priority)" if entry.priority != "medium" else ""
        lines.append(f"{_MARKS[entry.status]} {entry.content}{priority}")
    return "\n".join(lines)
