"""The `skill` tool: the model loads one of the skills listed in its system prompt."""

from __future__ import annotations

import asyncio

from pydantic import Field

from hermes_core.events import ToolKind
from hermes_core.prompt.skills import Skill, SkillError
from hermes_core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace


class SkillArgs(ToolArgs):
    name: str = Field(description="The skill's name, as listed under Skills in the system prompt.")


class SkillTool(Tool[SkillArgs]):
    """Load a skill: instructions (and the paths of its resource files) for a kind of task. Load the
    skill whose description fits the task before starting it."""

    name = "skill"
    kind: ToolKind = "read"

    def __init__(self, skills: list[Skill]) -> None:
        # Fixed at session start, like the list in the system prompt.
        self.skills = {skill.name: skill for skill in skills}

    def title(self, args: SkillArgs, workspace: Workspace) -> str:
        return f"Load skill {args.name}"

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        skill = self.skills.get(args.name.strip().lstrip("/"))
        if skill is None:
            known = ", ".join(self.skills) or "none"
            return ToolResult.error(f"There is no skill {args.name!r}. Skills: {known}.")
        try:
            return ToolResult(await asyncio.to_thread(skill.loaded_text))
        except (SkillError, OSError, UnicodeDecodeError) as exc:
            return ToolResult.error(f"The skill {skill.name!r} could not be read ({skill.path}): {exc}")
