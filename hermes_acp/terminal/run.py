"""`hermes-acp run "task"`: one prompt, one turn, an exit code that says how it ended."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import Any, TextIO

from acp.exceptions import RequestError

from hermes_acp.session.errors import AUTH_REQUIRED, INVALID_PARAMS, SESSION_NOT_FOUND
from hermes_acp.session.options import MODE_IDS
from hermes_acp.terminal import exit_codes
from hermes_acp.terminal.approvals import NoTerminalApprover, TerminalApprover, tty_asker
from hermes_acp.terminal.attachments import AttachmentError, prompt_blocks
from hermes_acp.terminal.client import TerminalClient
from hermes_acp.terminal.connect import connect
from hermes_acp.terminal.opening import Choices, initialize, open_session
from hermes_acp.terminal.render import make_view

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NO_TERMINAL_HINT = f"To allow such actions without asking, pass --mode ({' | '.join(MODE_IDS)})."


async def run_once(args: Any, choices: Choices, task: str, answer: TextIO, progress: TextIO) -> int:
    view = make_view(answer, progress, as_json=args.json)
    try:
        blocks = prompt_blocks(task, choices.cwd)
    except AttachmentError as exc:
        view.notice(f"error: {exc}")
        return exit_codes.USAGE
    if not task.strip():
        view.notice("error: the prompt is empty")
        return exit_codes.USAGE
    terminal = _terminal_to_ask_on(progress)
    approver: Any = (
        TerminalApprover(view, tty_asker(progress, terminal), choices.cwd)
        if terminal is not None
        else NoTerminalApprover(view, NO_TERMINAL_HINT)
    )
    client = TerminalClient(view, approver)
    link = await connect(args.server, client.handle)
    loop = asyncio.get_running_loop()
    try:
        # --json gets the plain ACP content (the output with the finished call), no extension.
        await initialize(link.connection, "hermes-acp run", live_output=not args.json)
        session_id = await open_session(link.connection, choices)
        view.notice(f"session {session_id} (continue it with --session {session_id})")
        interrupts = _Interrupts(link.connection, session_id, view)
        for signum in STOP_SIGNALS:  # Ctrl-C, a CI job's timeout, a closed terminal
            loop.add_signal_handler(signum, interrupts.hit)
        result = await link.connection.send_request(
            "session/prompt", {"sessionId": session_id, "prompt": blocks}
        )
        stop_reason = str(result.get("stopReason"))
        rejected = len(getattr(approver, "rejected", ()))
        code = exit_codes.for_stop_reason(stop_reason, rejected)
        if client.turn_error is not None:  # the client has said so
            code = exit_codes.CONFIG if client.turn_error.get("kind") == "auth" else exit_codes.ERROR
        elif code != exit_codes.OK:
            view.notice(_ending(stop_reason, rejected))
    except RequestError as exc:
        view.notice(f"error: {exc}")
        code = _code_for(exc)
    except ConnectionError as exc:
        view.notice(f"error: the server went away ({exc})")
        code = exit_codes.ERROR
    finally:
        view.finish()
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
        await link.close()
    return code


def _terminal_to_ask_on(progress: TextIO) -> int | None:
    """The fd to read a person's answers from: stdin when it is a terminal, else the
    controlling terminal when progress shows on one (`git diff | hermes-acp run -`);
    None when nobody is there to ask."""
    if not progress.isatty():
        return None
    if sys.stdin.isatty():
        return sys.stdin.fileno()
    try:
        return os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return None


def _ending(stop_reason: str, rejected: int) -> str:
    if stop_reason == "end_turn" and rejected:
        return f"the turn ended, but {rejected} permission request(s) were rejected: nobody could answer"
    return f"the turn stopped: {stop_reason}"


def _code_for(error: RequestError) -> int:
    if error.code == AUTH_REQUIRED or "misconfigured" in str(error):
        return exit_codes.CONFIG
    if error.code in (INVALID_PARAMS, SESSION_NOT_FOUND):
        return exit_codes.USAGE
    return exit_codes.ERROR


class _Interrupts:
    """Ctrl-C once: cancel the turn (it ends with `cancelled`, the session stays stored).
    Twice: leave now."""

    def __init__(self, connection: Any, session_id: str, view: Any) -> None:
        self.connection = connection
        self.session_id = session_id
        self.view = view
        self.count = 0
        self._tasks: set[asyncio.Task[Any]] = set()

    def hit(self) -> None:
        self.count += 1
        if self.count > 1:
            self.view.notice("interrupted again: exiting")
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(exit_codes.CANCELLED)
        self.view.notice("cancelling the turn… (Ctrl-C again to quit at once)")
        task = asyncio.create_task(
            self.connection.send_notification("session/cancel", {"sessionId": self.session_id})
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
