"""Mode, model and reasoning effort of a live session: what is offered, the changes, and
the updates that tell the client about them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_acp.session.catalog import ModelCatalog, model_takes_effort
from hermes_acp.session.errors import INVALID_PARAMS, error_response, protocol_error
from hermes_acp.session.options import (
    AUTO_COMPACT_OPTION,
    EFFORT_OPTION,
    MODE_IDS,
    MODE_OPTION,
    MODEL_OPTION,
    InvalidOption,
    OptionState,
    config_options,
    modes_state,
    parse_change,
)
from hermes_acp.session.records import save_record
from hermes_acp.session.updates import send_update

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_acp.session.state import ClientProfile, Session


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
            auto_compact=settings.auto_compact if self.client and self.client.boolean_options else None,
        )

    def session_state(self, session: Session) -> dict[str, Any]:
        """`modes` and `configOptions`, as session/new, load and resume answer them."""
        return {
            "modes": modes_state(session.agent.mode.value),
            "configOptions": config_options(self.options(session)),
        }

    def check_mode(self, mode_id: str) -> None:
        if mode_id not in MODE_IDS:
            valid = ", ".join(repr(m) for m in MODE_IDS)
            raise protocol_error(
                INVALID_PARAMS,
                f"unknown modeId {mode_id!r}; valid modes: {valid}",
                {"field": "modeId", "valid": list(MODE_IDS)},
            )

    def change(self, session: Session, config_id: str, value: Any) -> str:
        """Apply a session/set_config_option; the id of the option that changed."""
        try:
            config_id, new_value = parse_change(self.options(session), config_id, value)
        except InvalidOption as exc:
            raise error_response(exc) from exc
        if config_id == MODE_OPTION:
            assert new_value is not None
            self.apply_mode(session, new_value)
        elif config_id == MODEL_OPTION:
            assert new_value is not None
            self.apply_model(session, new_value)
        elif config_id == AUTO_COMPACT_OPTION:
            session.agent.settings.auto_compact = bool(new_value)
        elif config_id == EFFORT_OPTION:
            session.agent.reasoning_effort = new_value
            save_record(session, reasoning_effort=new_value)
        return config_id

    def apply_mode(self, session: Session, mode_id: str) -> None:
        from core.approval import Mode

        session.agent.mode = Mode(mode_id)
        save_record(session, mode=mode_id)

    def apply_model(self, session: Session, model: str) -> None:
        if session.turn is not None:
            # The running turn keeps its provider chain; the next one gets the new model.
            session.pending_model = model
        else:
            session.agent.model = model
            session.pending_model = None
        if not model_takes_effort(model):
            session.agent.reasoning_effort = None
        save_record(session, model=model, reasoning_effort=session.agent.reasoning_effort)

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
