"""Start a conversation over an ACP connection: initialize, a new or resumed session,
and the mode / model / effort asked for on the command line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.connection import Connection

from hermes_acp import __version__
from hermes_acp.session.options import EFFORT_OPTION, MODE_OPTION, MODEL_OPTION


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


def model_for_new_sessions(choices: Choices) -> None:
    """`--model` for a new session goes in as the configured model does (the server reads
    HERMES_ACP_MODEL when the session starts), so any model id the endpoint serves is
    accepted, as in config.toml; the picker only offers the models it knows of. Call
    before the server starts (a child inherits the environment)."""
    if choices.model and not choices.session:
        os.environ["HERMES_ACP_MODEL"] = choices.model


async def open_session(connection: Connection, choices: Choices) -> str:
    """The session id: `choices.session` resumed, or a new one. Raises RequestError."""
    cwd = str(choices.cwd)
    if choices.session:
        await connection.send_request(
            "session/resume", {"sessionId": choices.session, "cwd": cwd, "mcpServers": []}
        )
        session_id = choices.session
    else:
        response = await connection.send_request("session/new", {"cwd": cwd, "mcpServers": []})
        session_id = response["sessionId"]
    for option, value in (
        (MODE_OPTION, choices.mode),
        (MODEL_OPTION, choices.model if choices.session else None),  # a new one has it already
        (EFFORT_OPTION, choices.effort),
    ):
        if value is not None:
            await connection.send_request(
                "session/set_config_option", {"sessionId": session_id, "configId": option, "value": value}
            )
    return session_id
