"""`hermes-acp chat`: an interactive chat in the terminal, on the same server and
session machinery as the editors. prompt_toolkit gives line editing, history and
completion of slash commands (those the server announces plus the chat's own)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError
from prompt_toolkit.completion import Completer, Completion

from hermes_acp.terminal.approvals import TerminalApprover
from hermes_acp.terminal.attachments import AttachmentError, prompt_blocks
from hermes_acp.terminal.client import TerminalClient
from hermes_acp.terminal.connect import connect
from hermes_acp.terminal.opening import Choices, initialize, open_session
from hermes_acp.terminal.render import make_view

OWN_COMMANDS = {
    "/sessions": "list the sessions of this workspace and open one",
    "/help": "list the commands",
    "/quit": "leave (Ctrl-D does the same)",
}
PROMPT = "› "


async def chat(args: Any, choices: Choices) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    view = make_view(sys.stdout, sys.stdout)
    questions: PromptSession[str] = PromptSession()
    conversation = _Conversation()

    async def ask(prompt: str) -> str | None:
        try:
            return await questions.prompt_async(prompt)
        except (KeyboardInterrupt, EOFError):
            conversation.cancel()
            return None

    client = TerminalClient(view, TerminalApprover(view, ask, choices.cwd))
    lines: PromptSession[str] = PromptSession(
        history=FileHistory(str(_history_path())),
        completer=_SlashCompleter(client),
        complete_while_typing=True,
    )
    link = await connect("in-process", client.handle)
    conversation.connection = link.connection
    try:
        await initialize(link.connection, "hermes-acp chat")
        if args.session:
            await _reopen(link.connection, args.session, choices.cwd)
            conversation.session_id = args.session
        else:
            conversation.session_id = await open_session(link.connection, choices)
        view.notice(f"hermes-acp chat in {choices.cwd} — session {conversation.session_id}")
        view.notice("Type a message; /help lists commands; Ctrl-C cancels a turn; Ctrl-D quits.")
        while True:
            try:
                text = (await lines.prompt_async(PROMPT)).strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not text:
                continue
            if text in ("/quit", "/exit"):
                break
            if text == "/help":
                _help(view, client)
            elif text == "/sessions":
                await _sessions(conversation, view, questions, choices.cwd)
            else:
                try:
                    blocks = prompt_blocks(text, choices.cwd)
                except AttachmentError as exc:
                    view.notice(f"error: {exc}")
                    continue
                await conversation.turn(blocks, view)
    except RequestError as exc:
        view.notice(f"error: {exc}")
        return 1
    finally:
        view.finish()
        await link.close()
    return 0


class _Conversation:
    """The session being talked to, and its turn (Ctrl-C cancels it)."""

    def __init__(self) -> None:
        self.connection: Any = None
        self.session_id = ""
        self._cancel_sent = False
        self._cancelling: asyncio.Future[None] | None = None

    async def turn(self, blocks: list[dict[str, Any]], view: Any) -> None:
        loop = asyncio.get_running_loop()
        self._cancel_sent = False
        loop.add_signal_handler(signal.SIGINT, self.cancel)
        try:
            params = {"sessionId": self.session_id, "prompt": blocks}
            result = await self.connection.send_request("session/prompt", params)
            view.finish()
            stop = result.get("stopReason")
            if stop != "end_turn":
                view.notice(f"(turn ended: {stop})")
        except RequestError as exc:
            view.finish()
            view.notice(f"error: {exc}")
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    def cancel(self) -> None:
        if self._cancel_sent or not self.session_id:
            return
        self._cancel_sent = True
        self._cancelling = asyncio.ensure_future(
            self.connection.send_notification("session/cancel", {"sessionId": self.session_id})
        )


async def _sessions(conversation: _Conversation, view: Any, questions: Any, cwd: Path) -> None:
    listing = await conversation.connection.send_request("session/list", {"cwd": str(cwd)})
    sessions = [s for s in listing.get("sessions") or [] if s.get("sessionId") != conversation.session_id]
    if not sessions:
        view.notice("No other sessions in this workspace.")
        return
    for number, info in enumerate(sessions, 1):
        title = info.get("title") or "(untitled)"
        view.notice(f"  {number}) {title}  · {info.get('updatedAt', '')}  · {info['sessionId']}")
    try:
        answer = (await questions.prompt_async(f"Open which (1-{len(sessions)}, Enter to stay)? ")).strip()
    except (KeyboardInterrupt, EOFError):
        return
    if not (answer.isdigit() and 1 <= int(answer) <= len(sessions)):
        return
    session_id = sessions[int(answer) - 1]["sessionId"]
    try:
        await _reopen(conversation.connection, session_id, cwd)
    except RequestError as exc:
        view.notice(f"error: {exc}")
        return
    view.finish()
    conversation.session_id = session_id
    view.notice(f"Now in session {session_id}.")


async def _reopen(connection: Any, session_id: str, cwd: Path) -> None:
    # session/load replays the conversation, so the screen shows where it left off.
    await connection.send_request(
        "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
    )


def _help(view: Any, client: TerminalClient) -> None:
    for name, description in OWN_COMMANDS.items():
        view.notice(f"  {name:<12} {description}")
    for command in client.commands:
        view.notice(f"  /{command.get('name', ''):<11} {command.get('description', '')}")


def _history_path() -> Path:
    home = Path(os.environ.get("HERMES_ACP_HOME") or "~/.hermes-acp").expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home / "chat_history"


class _SlashCompleter(Completer):
    """Completes `/name` from the chat's own commands and the server's
    available_commands_update."""

    def __init__(self, client: TerminalClient) -> None:
        self.client = client

    def get_completions(self, document: Any, complete_event: Any) -> Any:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        names = dict(OWN_COMMANDS)
        for command in self.client.commands:
            names.setdefault(f"/{command.get('name', '')}", str(command.get("description", "")))
        for name, description in sorted(names.items()):
            if name.startswith(text):
                yield Completion(name, start_position=-len(text), display_meta=description)
