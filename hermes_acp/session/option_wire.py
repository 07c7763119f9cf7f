"""A session's options as the wire shows them: ACP `modes` and `configOptions`, from
plain data (an `OptionState`).

Pure and light (no pydantic, no engine): the server answers with it (options.py), and so
does the start-up layer when it answers a `session/new` before the server exists
(hermes_acp/startup/early_session.py). One table, so the two answers cannot drift.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MODE_OPTION = "mode"
MODEL_OPTION = "model"
EFFORT_OPTION = "reasoning_effort"
AUTO_COMPACT_OPTION = "auto_compact"
DEFAULT_EFFORT = "default"  # send no effort: the model's own default

MODES: tuple[tuple[str, str, str], ...] = (
    ("ask", "Ask", "Ask before editing files or running commands"),
    ("accept_edits", "Accept edits", "Edit workspace files without asking; ask before running commands"),
    ("plan", "Plan", "Read-only: look around and make a plan; no edits, no commands"),
    (
        "auto",
        "Auto",
        "Edit workspace files and run sandboxed commands without asking; ask before leaving the sandbox",
    ),
    ("yolo", "Yolo", "Do everything without asking, except commands a safety rule flags as dangerous"),
)
MODE_IDS = tuple(mode_id for mode_id, _, _ in MODES)

EFFORTS: tuple[tuple[str, str, str], ...] = (
    (DEFAULT_EFFORT, "Default", "The model's own default"),
    ("low", "Low", "Think briefly: faster and cheaper"),
    ("medium", "Medium", "Think a moderate amount"),
    ("high", "High", "Think hard: slower, for difficult problems"),
)
EFFORT_IDS = tuple(effort for effort, _, _ in EFFORTS)


@dataclass(slots=True)
class OptionState:
    mode: str
    model: str
    reasoning_effort: str | None = None
    models: list[str] = field(default_factory=list)  # offered in the picker, besides `model`
    reasoning: bool = False  # the model takes a reasoning effort
    auto_compact: bool | None = None  # None: not offered (the client takes no boolean options)

    def offered_models(self) -> list[str]:
        return unique([self.model, *self.models])


def modes_state(mode: str) -> dict[str, Any]:
    return {
        "currentModeId": mode,
        "availableModes": [
            {"id": mode_id, "name": name, "description": description} for mode_id, name, description in MODES
        ],
    }


def config_options(state: OptionState) -> list[dict[str, Any]]:
    """The complete configOptions list for the state."""
    options = [
        _select(
            MODE_OPTION,
            "Mode",
            "mode",
            state.mode,
            [{"value": m, "name": n, "description": d} for m, n, d in MODES],
            "How much the agent may do without asking",
        ),
        _select(
            MODEL_OPTION,
            "Model",
            "model",
            state.model,
            [{"value": model, "name": model} for model in state.offered_models()],
            "The model that answers the next prompt",
        ),
    ]
    if state.reasoning:
        options.append(
            _select(
                EFFORT_OPTION,
                "Reasoning effort",
                "thought_level",
                state.reasoning_effort or DEFAULT_EFFORT,
                [{"value": e, "name": n, "description": d} for e, n, d in EFFORTS],
                "How long the model thinks before it answers",
            )
        )
    if state.auto_compact is not None:
        options.append(
            {
                "id": AUTO_COMPACT_OPTION,
                "name": "Auto-compact",
                "description": "Summarise the middle of a long conversation when the context fills up",
                "type": "boolean",
                "currentValue": state.auto_compact,
            }
        )
    return options


def _select(
    option_id: str,
    name: str,
    category: str,
    current: str,
    options: list[dict[str, Any]],
    description: str,
) -> dict[str, Any]:
    return {
        "id": option_id,
        "name": name,
        "description": description,
        "category": category,
        "type": "select",
        "currentValue": current,
        "options": options,
    }


def session_state(state: OptionState) -> dict[str, Any]:
    """`modes` and `configOptions`, as session/new, load and resume answer them."""
    return {"modes": modes_state(state.mode), "configOptions": config_options(state)}


def model_takes_effort(model: str) -> bool:
    from hermes_core.models import model_info

    return model_info(model).reasoning in ("effort", "thinking")


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))
