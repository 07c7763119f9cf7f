"""Mode, model and reasoning effort, as ACP `modes` and `configOptions`.

Pure data in, wire dicts out: the session manager owns the state and calls these to
describe it, and `parse_change` to validate what a client asks to set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MODE_OPTION = "mode"
MODEL_OPTION = "model"
EFFORT_OPTION = "reasoning_effort"
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


class InvalidOption(ValueError):
    """A config id or value the session does not offer; the message says what it does."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field  # the request field at fault: "configId" or "value"


@dataclass(slots=True)
class OptionState:
    mode: str
    model: str
    reasoning_effort: str | None = None
    models: list[str] = field(default_factory=list)  # offered in the picker, besides `model`
    reasoning: bool = False  # the model takes a reasoning effort

    def offered_models(self) -> list[str]:
        return _unique([self.model, *self.models])


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
    return options


def parse_change(state: OptionState, config_id: str, value: Any) -> tuple[str, str | None]:
    """Validate a set_config_option request: (config id, the new value for the state —
    None meaning "no reasoning effort"). Raises InvalidOption naming what is valid."""
    valid_ids = [MODE_OPTION, MODEL_OPTION] + ([EFFORT_OPTION] if state.reasoning else [])
    if config_id not in valid_ids:
        offered = _listed(valid_ids)
        raise InvalidOption(f"unknown configId {config_id!r}; this session offers {offered}", "configId")
    if not isinstance(value, str):
        raise InvalidOption(f"configId {config_id!r} is a select option; its value must be a string", "value")
    if config_id == MODE_OPTION:
        allowed: Iterable[str] = MODE_IDS
    elif config_id == MODEL_OPTION:
        allowed = state.offered_models()
    else:
        allowed = EFFORT_IDS
    allowed = list(allowed)
    if value not in allowed:
        raise InvalidOption(
            f"unknown value {value!r} for configId {config_id!r}; valid values: {_listed(allowed)}", "value"
        )
    if config_id == EFFORT_OPTION and value == DEFAULT_EFFORT:
        return config_id, None
    return config_id, value


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


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _listed(values: Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)
