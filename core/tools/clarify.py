"""clarify: ask the user a question and read the answer.

Where the editor can show a form (ACP elicitation), the question goes there and the
answer is the result. Where it cannot, the question becomes the turn's last message
and the turn ends: the user's next prompt is the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import Field

from hermes_core.events import ToolKind
from hermes_core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from hermes_core.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Answer:
    action: Literal["accept", "decline", "cancel"]
    text: str = ""


class Asker(Protocol):
    async def ask(self, question: str, choices: list[str], call_id: str) -> Answer | None:
        """The user's answer; None when this editor cannot ask (the turn then ends with
        the question). Cancelling the awaiting task withdraws the question."""
        ...


class TurnEnder(Protocol):
    """Where the question goes when the editor cannot ask it (`inbox.TurnInbox`)."""

    def end_turn_with(self, text: str) -> None: ...


class ClarifyArgs(ToolArgs):
    question: str = Field(description="One clear question for the user.")
    choices: list[str] = Field(
        default_factory=list, description="The answers to choose from; omit for a free-text answer."
    )


class ClarifyTool(Tool[ClarifyArgs]):
    """Ask the user a question when the task is ambiguous and guessing would waste work or do the
    wrong thing. Give choices when the answer is one of a few. Do not use it for what you can find
    out yourself by reading files or running commands."""

    name = "clarify"
    kind: ToolKind = "think"
    read_only = True
    interactive = True  # one question at a time

    def __init__(self, ender: TurnEnder, asker: Callable[[], Asker | None]) -> None:
        self._ender = ender
        self._asker = asker  # read at each call: the embedder plugs it in after the tool exists

    def title(self, args: ClarifyArgs, workspace: Workspace) -> str:
        return f"Question: {args.question}"

    async def run(self, args: ClarifyArgs, ctx: ToolContext) -> ToolResult:
        question = args.question.strip()
        if not question:
            return ToolResult.error("The question is empty.")
        asker = self._asker()
        answer = await asker.ask(question, args.choices, ctx.call_id) if asker is not None else None
        if answer is None:
            self._ender.end_turn_with(_as_message(question, args.choices))
            return ToolResult(
                text="This editor cannot show questions: it was shown as your answer, and the turn "
                "ends here. The user's next message is the answer.",
                raw_output={"asked": "as_message"},
            )
        if answer.action == "accept":
            return ToolResult(text=f"The user answered: {answer.text}", raw_output={"answer": answer.text})
        if answer.action == "decline":
            return ToolResult(
                text="The user declined to answer. Go on with your best judgement, and say what you assumed.",
                raw_output={"answer": None, "action": "decline"},
            )
        return ToolResult(
            text="The user dismissed the question without answering. Do not ask it again this turn.",
            raw_output={"answer": None, "action": "cancel"},
        )


def _as_message(question: str, choices: list[str]) -> str:
    if not choices:
        return question
    return question + "\n\n" + "\n".join(f"- {choice}" for choice in choices)
