"""The client side of the ACP connection for terminal use: shows updates, answers the
server's permission requests, and keeps what it learns (tool calls, slash commands)."""

from __future__ import annotations

from typing import Any, Protocol

from acp.exceptions import RequestError


class View(Protocol):
    def update(self, update: dict[str, Any], params: dict[str, Any]) -> None: ...

    def notice(self, text: str) -> None: ...

    def diff(self, text: str) -> None: ...

    def finish(self) -> None: ...


class Approver(Protocol):
    async def decide(self, params: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
        """The `session/request_permission` result for `params`; `call` is what the
        tool call's updates said so far (its rawInput, content)."""
        ...


class TerminalClient:
    def __init__(self, view: View, approver: Approver) -> None:
        self.view = view
        self.approver = approver
        self.calls: dict[str, dict[str, Any]] = {}
        self.commands: list[dict[str, Any]] = []
        self.turn_error: dict[str, Any] | None = None  # the model provider failed this turn

    async def handle(self, method: str, params: Any, is_notification: bool) -> Any:
        if method == "session/update" and isinstance(params, dict):
            update = params.get("update") or {}
            failure = _turn_error(update)
            if failure is not None:
                # The editors' form of a failed model call is a line in the answer; here it
                # is said once, as an error, and the answer stays the answer.
                self.turn_error = failure
                if getattr(self.view, "verbatim", False):  # --json: every update, as sent
                    self.view.update(update, params)
                self.view.notice(f"error: the model provider failed: {failure.get('message', '')}")
                return None
            self._remember(update)
            self.view.update(update, params)
            return None
        if method == "session/request_permission" and isinstance(params, dict):
            call_id = (params.get("toolCall") or {}).get("toolCallId")
            call = self.calls.get(call_id, {}) if isinstance(call_id, str) else {}
            return await self.approver.decide(params, call)
        if is_notification:
            return None
        raise RequestError.method_not_found(method)

    def _remember(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind in ("tool_call", "tool_call_update"):
            call = self.calls.setdefault(update.get("toolCallId", ""), {})
            call.update({k: v for k, v in update.items() if v is not None})
        elif kind == "available_commands_update":
            self.commands = list(update.get("availableCommands") or [])


def _turn_error(update: dict[str, Any]) -> dict[str, Any] | None:
    """`_meta.hermes.turnError` of the notice a failed model call sends, if it is one."""
    meta = update.get("_meta")
    hermes = meta.get("hermes") if isinstance(meta, dict) else None
    failure = hermes.get("turnError") if isinstance(hermes, dict) else None
    return failure if isinstance(failure, dict) else None
