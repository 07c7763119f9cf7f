"""Mode, model and reasoning effort, as ACP `modes` and `configOptions`.

Pure data in, wire dicts out: the session manager owns the state and calls these to
describe it, and `parse_change` to validate what a client asks to set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from core.errors import InvalidInput

if TYPE_CHECKING:
    from core.models import Usage

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


class SetModelParams(BaseModel):
    """`session/set_model`, which older clients send (now the `model` config option)."""

    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId", min_length=1)


class InvalidOption(InvalidInput):
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
    auto_compact: bool | None = None  # None: not offered (the client takes no boolean options)

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


def parse_change(state: OptionState, config_id: str, value: Any) -> tuple[str, Any]:
    """Validate a set_config_option request: (config id, the new value for the state —
    None meaning "no reasoning effort"). Raises InvalidOption naming what is valid."""
    valid_ids = [MODE_OPTION, MODEL_OPTION] + ([EFFORT_OPTION] if state.reasoning else [])
    if state.auto_compact is not None:
        valid_ids.append(AUTO_COMPACT_OPTION)
    if config_id not in valid_ids:
        offered = _listed(valid_ids)
        raise InvalidOption(f"unknown configId {config_id!r}; this session offers {offered}", "configId")
    if config_id == AUTO_COMPACT_OPTION:
        if not isinstance(value, bool):
            raise InvalidOption(
                f"configId {config_id!r} is a boolean option; its value must be true or false", "value"
            )
        return config_id, value
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


def prompt_usage(before: Usage, after: Usage) -> dict[str, int] | None:
    """`PromptResponse.usage`: the tokens this turn used; None when it made no model call."""
    inputs = after.input_tokens - before.input_tokens
    outputs = after.output_tokens - before.output_tokens
    if not inputs and not outputs:
        return None
    return {
        "totalTokens": inputs + outputs,
        "inputTokens": inputs,
        "outputTokens": outputs,
        "thoughtTokens": after.reasoning_tokens - before.reasoning_tokens,
        "cachedReadTokens": after.cached_tokens - before.cached_tokens,
        "cachedWriteTokens": after.cache_write_tokens - before.cache_write_tokens,
    }


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _listed(values: Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)
