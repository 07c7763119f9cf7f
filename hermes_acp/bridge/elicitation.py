"""The clarify tool's questions as ACP `elicitation/create` forms (only to a client that
advertised form elicitation in `initialize`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

from hermes_core.tools.clarify import Answer

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel

log = logging.getLogger(__name__)

ANSWER_FIELD = "answer"


class ElicitationAsker:
    def __init__(self, channel: ClientChannel, session_id: str) -> None:
        self._channel = channel
        self._session_id = session_id

    async def ask(self, question: str, choices: list[str], call_id: str) -> Answer | None:
        params = question_params(self._session_id, question, choices, call_id)
        request_id = _next_request_id(self._channel)
        try:
            response = await self._channel.send_request("elicitation/create", params)
        except asyncio.CancelledError:
            await self._withdraw(request_id)
            raise
        except (RequestError, ConnectionError) as exc:
            # The client said it could ask and then could not: the question becomes the answer.
            log.warning("elicitation/create failed (%s); the question ends the turn instead", exc)
            return None
        return _answer(response)

    async def _withdraw(self, request_id: int | None) -> None:
        """Cancel left the question open in the editor: tell it to take the form down."""
        if request_id is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.shield(
                self._channel.send_notification("$/cancel_request", {"requestId": request_id})
            )


def question_params(session_id: str, question: str, choices: list[str], call_id: str) -> dict[str, Any]:
    field: dict[str, Any] = {"type": "string", "title": "Your answer"}
    if choices:
        field["enum"] = list(dict.fromkeys(choices))
    return {
        "sessionId": session_id,
        "toolCallId": call_id,
        "mode": "form",
        "message": question,
        "requestedSchema": {
            "type": "object",
            "properties": {ANSWER_FIELD: field},
            "required": [ANSWER_FIELD],
        },
    }


def _answer(response: Any) -> Answer:
    action = response.get("action") if isinstance(response, dict) else None
    if action == "accept":
        content = response.get("content") or {}
        value = content.get(ANSWER_FIELD) if isinstance(content, dict) else None
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        return Answer("accept", "" if value is None else str(value))
    if action == "decline":
        return Answer("decline")
    return Answer("cancel")  # cancel, or an action this agent does not know


def _next_request_id(channel: ClientChannel) -> int | None:
    """The id `send_request` is about to use (the SDK's Connection numbers requests in
    order and exposes no hook): what `$/cancel_request` names to withdraw it."""
    value = getattr(channel, "_next_request_id", None)
    return value if isinstance(value, int) else None
