"""A session's options: mode, model, reasoning effort and auto-compact, as ACP `modes`
and `configOptions`; validating and applying a change, and the updates that announce it;
the models an endpoint lists, which the model option offers.

`config_options` and `parse_change` are pure (data in, wire dicts out); `SessionControls`
applies them to a live session; `ModelCatalog` fetches each endpoint's model list once
and shares it among the sessions using that endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.bridge.channel import send_update
from hermes_acp.session.option_wire import (
    AUTO_COMPACT_OPTION,
    DEFAULT_EFFORT,
    EFFORT_IDS,
    EFFORT_OPTION,
    EFFORTS,
    MODE_IDS,
    MODE_OPTION,
    MODEL_OPTION,
    MODES,
    OptionState,
    config_options,
    model_takes_effort,
    modes_state,
    session_state,
)
from hermes_core.errors import InvalidInput

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.state import ClientProfile, Session
    from hermes_core.config import Settings

log = logging.getLogger(__name__)

# The option tables and their wire form are option_wire.py's (also the early session/new
# answer's); these names stay importable from here.
__all__ = [
    "AUTO_COMPACT_OPTION",
    "DEFAULT_EFFORT",
    "EFFORTS",
    "EFFORT_IDS",
    "EFFORT_OPTION",
    "MODEL_OPTION",
    "MODES",
    "MODE_IDS",
    "MODE_OPTION",
    "ModelCatalog",
    "OptionState",
    "SessionControls",
    "SetModelParams",
    "config_options",
    "model_takes_effort",
    "modes_state",
    "parse_change",
]

# The terminal client imports this module for the option names and ids: what only the
# server needs (the JSON-RPC errors, which load the ACP SDK's schema) is imported where used.

MODEL_LIST_TIMEOUT = 10.0
MODEL_LIST_RETRY_SECONDS = 300.0  # an endpoint without a model list is asked again after this


class SetModelParams(BaseModel):
    """`session/set_model`, which older clients send (now the `model` config option)."""

    model_config = ConfigDict(populate_by_name=True, defer_build=True)  # built at its first request
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId", min_length=1)


class InvalidOption(InvalidInput):
    """A config id or value the session does not offer; the message says what it does."""

    def __init__(self, message: str, field: str, valid: list[str] | None = None) -> None:
        super().__init__(message)
        self.field = field  # the request field at fault: "configId" or "value"
        self.valid = valid  # what the field may be, when the session offers a list


def parse_change(state: OptionState, config_id: str, value: Any) -> tuple[str, Any]:
    """Validate a set_config_option request: (config id, the new value for the state —
    None meaning "no reasoning effort"). Raises InvalidOption naming what is valid."""
    valid_ids = [MODE_OPTION, MODEL_OPTION] + ([EFFORT_OPTION] if state.reasoning else [])
    if state.auto_compact is not None:
        valid_ids.append(AUTO_COMPACT_OPTION)
    if config_id not in valid_ids:
        offered = _listed(valid_ids)
        raise InvalidOption(
            f"unknown configId {config_id!r}; this session offers {offered}", "configId", valid_ids
        )
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
            f"unknown value {value!r} for configId {config_id!r}; valid values: {_listed(allowed)}",
            "value",
            allowed,
        )
    if config_id == EFFORT_OPTION and value == DEFAULT_EFFORT:
        return config_id, None
    return config_id, value


# -- a live session's options ---------------------------------------------------------


class SessionControls:
    def __init__(
        self, channel: ClientChannel, catalog: ModelCatalog, client: ClientProfile | None = None
    ) -> None:
        self.channel = channel
        self.catalog = catalog
        self.client = client  # shared with the server: filled in by `initialize`

    def options(self, session: Session) -> OptionState:
        settings = session.agent.settings
        model = session.model
        return OptionState(
            mode=session.agent.mode.value,
            model=model,
            reasoning_effort=session.agent.reasoning_effort,
            models=[settings.model, *settings.models, *session.extra_models, *self.catalog.known(settings)],
            reasoning=model_takes_effort(model),
            auto_compact=session.agent.auto_compact if self.client and self.client.boolean_options else None,
        )

    def session_state(self, session: Session) -> dict[str, Any]:
        """`modes` and `configOptions`, as session/new, load and resume answer them."""
        return session_state(self.options(session))

    def check_mode(self, mode_id: str) -> None:
        if mode_id not in MODE_IDS:
            from hermes_acp.session.errors import INVALID_PARAMS, protocol_error

            valid = ", ".join(repr(m) for m in MODE_IDS)
            raise protocol_error(
                INVALID_PARAMS,
                f"unknown modeId {mode_id!r}; valid modes: {valid}",
                {"field": "modeId", "valid": list(MODE_IDS)},
            )

    def change(self, session: Session, config_id: str, value: Any) -> str:
        """Apply a session/set_config_option; the id of the option that changed."""
        from hermes_core.store.writer import save_record

        try:
            config_id, new_value = parse_change(self.options(session), config_id, value)
        except InvalidOption as exc:
            from hermes_acp.session.error_codes import error_response

            raise error_response(exc, data={"valid": exc.valid} if exc.valid else None) from exc
        if config_id == MODE_OPTION:
            assert new_value is not None
            self.apply_mode(session, new_value)
        elif config_id == MODEL_OPTION:
            assert new_value is not None
            self.apply_model(session, new_value)
        elif config_id == AUTO_COMPACT_OPTION:
            session.agent.set_auto_compact(bool(new_value))
        elif config_id == EFFORT_OPTION:
            session.agent.set_effort(new_value)
            save_record(session, reasoning_effort=new_value)
        return config_id

    def apply_mode(self, session: Session, mode_id: str) -> None:
        from hermes_core.policy.approval import Mode
        from hermes_core.store.writer import save_record

        session.agent.switch_mode(Mode(mode_id))
        save_record(session, mode=mode_id)

    def apply_model(self, session: Session, model: str) -> None:
        from hermes_core.store.writer import save_record

        if session.turn is not None:
            # The running turn keeps its provider chain; the next one gets the new model.
            session.pending_model = model
        else:
            session.agent.switch_model(model)
            session.pending_model = None
        if not model_takes_effort(model):
            session.agent.set_effort(None)
        save_record(session, model=model, reasoning_effort=session.agent.reasoning_effort)

    async def model_problem(self, session: Session, model_id: str) -> str | None:
        """Why the session may not switch to `model_id`, or None when it may: a model it
        offers already, or one the endpoint lists (as `--check` judges the configured
        model), or, when the endpoint lists nothing to judge by, any id, which the picker
        offers from then on. A model the endpoint does not list would fail only at the
        next prompt, far from the choice that caused it. (Every way of picking a model
        asks this: `session/set_model`, the `model` option, `/model`, `run --model`.)"""
        from hermes_core.providers.model_list import model_problem

        if model_id in self.options(session).offered_models():
            return None
        settings = session.agent.settings
        listed = await self.catalog.fetch(settings) or self.catalog.known(settings)
        problem = model_problem(model_id, listed)
        if problem is None:
            session.extra_models.append(model_id)
        return problem

    async def notify_mode(self, session: Session) -> None:
        await send_update(
            self.channel,
            session.id,
            {"sessionUpdate": "current_mode_update", "currentModeId": session.agent.mode.value},
        )

    async def notify_config(self, session: Session) -> None:
        await send_update(
            self.channel,
            session.id,
            {"sessionUpdate": "config_option_update", "configOptions": config_options(self.options(session))},
        )


# -- the endpoint's model list ----------------------------------------------------------


class ModelCatalog:
    """The endpoint's model list, fetched once per endpoint and shared by its sessions.
    An endpoint that gave no list is asked again only after a while."""

    def __init__(self, retry_after: float = MODEL_LIST_RETRY_SECONDS) -> None:
        self._lists: dict[tuple[str, ...], tuple[list[str], float]] = {}
        self._fetching: dict[tuple[str, ...], asyncio.Task[list[str]]] = {}
        self._retry_after = retry_after

    @staticmethod
    def _key(settings: Settings) -> tuple[str, ...]:
        return (
            settings.provider,
            settings.base_url or "",
            settings.openai_base_url or "",
            settings.anthropic_base_url or "",
        )

    def known(self, settings: Settings) -> list[str]:
        """The list fetched in this run, else the one an earlier run kept under the home."""
        from hermes_core.providers.model_list import cached_models

        return self._lists.get(self._key(settings), ([], 0.0))[0] or cached_models(settings)

    async def fetch(self, settings: Settings) -> list[str]:
        key = self._key(settings)
        cached = self._lists.get(key)
        if cached is not None and (cached[0] or time.monotonic() - cached[1] < self._retry_after):
            return cached[0]
        task = self._fetching.get(key)
        if task is None:
            task = self._fetching[key] = asyncio.create_task(list_endpoint_models(settings))
        try:
            models = await asyncio.shield(task)
        finally:
            if task.done():
                self._fetching.pop(key, None)
        self._lists[key] = (models, time.monotonic())
        return models


async def list_endpoint_models(settings: Settings) -> list[str]:
    """The models the endpoint lists (kept under the home for later runs); [] when it
    lists none or cannot be asked."""
    from hermes_core.providers.resolve import build_chain

    provider = None
    try:
        provider = build_chain(settings)[0]
        models = await asyncio.wait_for(provider.list_models(), MODEL_LIST_TIMEOUT)
        listed = [m for m in models if isinstance(m, str) and m]
        from hermes_core.providers.model_list import remember_models

        await asyncio.to_thread(remember_models, settings, listed)
        return listed
    except Exception as exc:  # a missing list is normal (many endpoints have none)
        log.info("no model list from the endpoint: %s", exc)
        return []
    finally:
        if provider is not None:
            try:
                await provider.aclose()
            except Exception:
                log.debug("closing the model-list client failed", exc_info=True)


def _listed(values: Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)
