"""Start a conversation over an ACP connection: initialize, a new or resumed session,
and the mode / model / effort asked for on the command line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.connection import Connection
from acp.exceptions import RequestError

from hermes_acp import __version__
from hermes_acp.session.errors import INVALID_PARAMS
from hermes_acp.session.options import EFFORT_OPTION, MODE_OPTION, MODEL_OPTION

SHOWN_CHOICES = 12  # an endpoint may list hundreds of models


@dataclass
class Choices:
    cwd: Path
    mode: str | None = None
    model: str | None = None
    effort: str | None = None
    session: str | None = None


def choices_from(args: Any) -> Choices:
    return Choices(Path(args.cwd or os.getcwd()).resolve(), args.mode, args.model, args.effort, args.session)


async def initialize(connection: Connection, name: str, *, live_output: bool = True) -> dict[str, Any]:
    """No fs or terminal capability: the agent edits files and runs commands itself.
    `live_output` asks for command output as it comes (the `_meta.terminal_output`
    convention Zed introduced); without it, output arrives with the finished call."""
    capabilities: dict[str, Any] = {"_meta": {"terminal_output": True}} if live_output else {}
    client = {"name": name, "version": __version__}
    return await connection.send_request(
        "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities, "clientInfo": client}
    )


async def open_session(connection: Connection, choices: Choices) -> str:
    """The session id: `choices.session` resumed, or a new one, with the mode, model and
    effort asked for. Raises RequestError, a refused choice in the user's words (code
    -32602, which `run` exits 2 for)."""
    cwd = str(choices.cwd)
    if choices.session:
        response = await connection.send_request(
            "session/resume", {"sessionId": choices.session, "cwd": cwd, "mcpServers": []}
        )
        session_id = choices.session
    else:
        response = await connection.send_request("session/new", {"cwd": cwd, "mcpServers": []})
        session_id = response["sessionId"]
    options: list[dict[str, Any]] = response.get("configOptions") or []
    # The model before the effort: whether a model takes an effort depends on the model.
    # A new session's model goes through the same check as an editor's pick, so a model
    # the endpoint does not list is refused here, before any prompt is sent.
    for option, flag, value in (
        (MODE_OPTION, "--mode", choices.mode),
        (MODEL_OPTION, "--model", choices.model),
        (EFFORT_OPTION, "--effort", choices.effort),
    ):
        if value is None:
            continue
        params = {"sessionId": session_id, "configId": option, "value": value}
        try:
            result = await connection.send_request("session/set_config_option", params)
        except RequestError as exc:
            raise RequestError(exc.code, refusal(flag, value, options, exc), exc.data) from None
        options = result.get("configOptions") or options
    return session_id


def refusal(flag: str, value: str, options: list[dict[str, Any]], error: RequestError) -> str:
    """Why the server refused a command-line choice, said in the command line's terms."""
    if error.code != INVALID_PARAMS:
        return f"{flag} {value}: {error}"
    current = {option.get("id"): option for option in options}
    if flag == "--effort" and EFFORT_OPTION not in current:
        model = (current.get(MODEL_OPTION) or {}).get("currentValue", "this model")
        return f"--effort {value}: the model {model} takes no reasoning effort; leave out --effort"
    data = error.data if isinstance(error.data, dict) else {}
    what = "the endpoint does not offer this model" if flag == "--model" else "not a choice"
    valid = [str(v) for v in data.get("valid") or []]
    if not valid:
        return f"{flag} {value}: {what}"
    more = f" (and {len(valid) - SHOWN_CHOICES} more)" if len(valid) > SHOWN_CHOICES else ""
    return f"{flag} {value}: {what}; choose one of: {', '.join(valid[:SHOWN_CHOICES])}{more}"
