"""Answers to `session/request_permission` from a terminal: the person is asked (the
diff or the command shown first); with nobody to ask, the request is rejected and the
rejection reported, never silently allowed."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hermes_acp.terminal.display import command_of, proposed_change
from hermes_core.shell.shown import shown

Ask = Callable[[str], Awaitable[str | None]]  # None: the person gave up (Ctrl-C)
REJECT_KINDS = ("reject_once", "reject_always")


def _selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def _title(params: dict[str, Any], call: dict[str, Any]) -> str:
    return str((params.get("toolCall") or {}).get("title") or call.get("title") or "a tool call")


def _reason(params: dict[str, Any]) -> str:
    hermes = ((params.get("_meta") or {}).get("hermes")) or {}
    return str(hermes.get("reason") or "")


class TerminalApprover:
    def __init__(self, view: Any, ask: Ask, cwd: Path) -> None:
        self.view = view
        self.ask = ask
        self.cwd = cwd

    async def decide(self, params: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
        options = [o for o in params.get("options") or [] if isinstance(o, dict) and o.get("optionId")]
        if not options:
            return {"outcome": {"outcome": "cancelled"}}
        raw_input = (params.get("toolCall") or {}).get("rawInput") or call.get("rawInput")
        # Escaped again: a terminal obeys what an editor only shows (`\x1b[1A` moves back up).
        self.view.notice(f"Permission needed: {shown(_title(params, call))}")
        if reason := _reason(params):
            self.view.notice(f"  why: {shown(reason)}")
        if command := command_of(raw_input):
            self.view.notice(f"  $ {shown(command, lines=True)}")
        if change := proposed_change(raw_input, self.cwd):
            # The model's new text: `\x1b[1A\x1b[2K` in it would erase the diff's lines above.
            self.view.diff(shown(change, lines=True))
        for number, option in enumerate(options, 1):
            self.view.notice(f"  {number}) {shown(str(option.get('name', option['optionId'])))}")
        while True:
            answer = await self.ask(f"Choose 1-{len(options)}: ")
            if answer is None:
                return {"outcome": {"outcome": "cancelled"}}
            answer = answer.strip()
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return _selected(options[int(answer) - 1]["optionId"])
            self.view.notice(f"Please answer with a number from 1 to {len(options)}.")


class NoTerminalApprover:
    """No terminal to ask on: reject, say so on stderr, count it for the exit code."""

    def __init__(self, view: Any, hint: str) -> None:
        self.view = view
        self.hint = hint
        self.rejected: list[str] = []

    async def decide(self, params: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
        title = _title(params, call)
        self.rejected.append(title)
        reason = _reason(params)
        self.view.notice(
            f"rejected (no terminal to ask): {title}{f' — {reason}' if reason else ''}. {self.hint}"
        )
        for kind in REJECT_KINDS:
            for option in params.get("options") or []:
                if isinstance(option, dict) and option.get("kind") == kind and option.get("optionId"):
                    return _selected(option["optionId"])
        return {"outcome": {"outcome": "cancelled"}}


def tty_asker(progress: Any, fd: int = 0) -> Ask:
    """Read one line from the terminal on `fd` without blocking the event loop (so a
    Ctrl-C, which cancels the turn, is not stuck behind a blocking read)."""

    async def ask(prompt: str) -> str | None:
        progress.write(prompt)
        progress.flush()
        loop = asyncio.get_running_loop()
        got: asyncio.Future[str] = loop.create_future()
        buffer = bytearray()

        def readable() -> None:
            data = os.read(fd, 1024)
            buffer.extend(data)
            if (not data or b"\n" in buffer) and not got.done():
                got.set_result(buffer.decode("utf-8", errors="replace").split("\n", 1)[0])

        loop.add_reader(fd, readable)
        try:
            return await got
        finally:
            loop.remove_reader(fd)

    return ask
