"""How `run` and `chat` show a turn: the answer streamed to one stream, progress (tool
calls, diffs, command output, plan, notices) to another. Three looks: plain lines (not
a terminal, or CI logs), rich (a terminal; `rich` is imported only here, lazily), and
JSON lines (`--json`: every session/update, for machines)."""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

from hermes_acp.terminal.display import content_text
from hermes_acp.terminal.markdown_blocks import MarkdownBlocks

FINAL = ("completed", "failed")
PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


_LINE_ENDS = re.compile(r"\r\n?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(value: Any) -> Any:
    """`value` with every control character but newline and tab in its strings escaped
    (`\x1b`); a carriage return ends a line."""
    if isinstance(value, str):
        return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", _LINE_ENDS.sub("\n", value))
    if isinstance(value, dict):
        return {key: _printable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable(item) for item in value]
    return value


class PlainView:
    def __init__(self, answer: TextIO, progress: TextIO) -> None:
        self.answer = answer
        self.progress = progress
        self._titles: dict[str, str] = {}
        # What each finished call's card showed: a later final update that says more (a
        # background command's end, long after its call returned) is shown again.
        self._finished: dict[str, list[tuple[str, str]]] = {}
        self._partial: dict[str, str] = {}  # live command output not yet ending a line
        self._mid_line = False  # the answer's last chunk did not end a line
        self.shared_screen = _same_terminal(answer, progress)

    # -- the View protocol -----------------------------------------------------------

    def update(self, update: dict[str, Any], params: dict[str, Any]) -> None:
        # Everything here reaches a terminal, which obeys control sequences: the model's
        # text or a command's output could set the clipboard (OSC 52), move the cursor back
        # over an approval, or retitle the window. They are shown escaped instead.
        update = _printable(update)
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self.answer_text(_text(update))
        elif kind == "agent_thought_chunk":
            self.thought_text(_text(update))
        elif kind == "user_message_chunk":
            self.line(f"> {_text(update)}")
        elif kind == "tool_call":
            call_id = str(update.get("toolCallId"))
            self._titles[call_id] = str(update.get("title") or "tool")
            self.call_started(self._titles[call_id])
            self._call_update(update)  # a replayed call arrives finished
        elif kind == "tool_call_update":
            self._live_output(update)
            self._call_update(update)
        elif kind == "plan":
            self.plan(list(update.get("entries") or []))

    def notice(self, text: str) -> None:
        self.line(text)

    def diff(self, text: str) -> None:
        for row in text.rstrip("\n").splitlines():
            self.line(f"  {row}")

    def finish(self) -> None:
        if self._mid_line:
            self.answer.write("\n")
            self.answer.flush()
            self._mid_line = False

    # -- what subclasses restyle -------------------------------------------------------------

    def answer_text(self, text: str) -> None:
        if not text:
            return
        self.answer.write(text)
        self.answer.flush()
        self._mid_line = not text.endswith("\n")

    def thought_text(self, text: str) -> None:
        """Plain output leaves the model's thinking out: a log or a script wants the work."""

    def call_started(self, title: str) -> None:
        self.line(f"→ {title}")

    def call_finished(self, title: str, status: str, items: list[tuple[str, str]]) -> None:
        self.line(
            f"{'✓' if status == 'completed' else '✗'} {title}{'' if status == 'completed' else ' (failed)'}"
        )
        for _, text in items:
            for row in text.rstrip("\n").splitlines():
                self.line(f"  {row}")

    def output_line(self, text: str) -> None:
        self.line(f"  {text}")

    def plan(self, entries: list[dict[str, Any]]) -> None:
        self.line("plan:")
        for entry in entries:
            self.line(f"  {PLAN_MARKS.get(entry.get('status', ''), '[ ]')} {entry.get('content', '')}")

    def line(self, text: str) -> None:
        self._break_answer_line()
        self.progress.write(text + "\n")
        self.progress.flush()

    # -- helpers --------------------------------------------------------------------------

    def _live_output(self, update: dict[str, Any]) -> None:
        """A running command's output as it comes (the `_meta.terminal_output` deltas a
        client that asks for them gets), line by line."""
        meta = update.get("_meta")
        output = meta.get("terminal_output") if isinstance(meta, dict) else None
        if not isinstance(output, dict) or not isinstance(output.get("data"), str):
            return
        call_id = str(update.get("toolCallId"))
        text = self._partial.pop(call_id, "") + output["data"]
        *lines, rest = text.split("\n")
        for row in lines:
            self.output_line(row.rstrip("\r"))
        if rest:
            self._partial[call_id] = rest

    def _call_update(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        if update.get("title"):
            self._titles[call_id] = str(update["title"])
        status = update.get("status")
        if status not in FINAL:
            return
        items = [shown for item in update.get("content") or [] if (shown := content_text(item))]
        if call_id in self._finished and (not items or items == self._finished[call_id]):
            return
        self._finished[call_id] = list(items)
        if rest := self._partial.pop(call_id, ""):
            self.output_line(rest)
        meta = update.get("_meta")
        ended = meta.get("terminal_exit") if isinstance(meta, dict) else None
        if isinstance(ended, dict) and ended.get("exit_code") not in (None, 0):
            items.append(("output", f"exit code {ended['exit_code']}"))
        elif isinstance(ended, dict) and ended.get("signal"):
            items.append(("output", f"killed by {ended['signal']}"))
        self.call_finished(self._titles.get(call_id, "tool"), str(status), items)

    def _break_answer_line(self) -> None:
        # Progress and answer share one screen: start progress on a line of its own.
        if self._mid_line and self.shared_screen:
            self.answer.write("\n")
            self.answer.flush()
            self._mid_line = False


class RichView(PlainView):
    """The same events, styled, with a spinner while a tool runs; the model's thinking
    dimmed; on a terminal, the answer rendered as Markdown, block by block as it streams
    (piped, the answer stays the model's text, for the script that reads it)."""

    def __init__(self, answer: TextIO, progress: TextIO) -> None:
        super().__init__(answer, progress)
        from rich.console import Console

        self.console = Console(file=progress, highlight=False, soft_wrap=True)
        self._status: Any = None
        self._thinking = False  # thought text shown, its line not ended yet
        self._markdown: MarkdownBlocks | None = None
        self._answer_console: Any = None
        self._blocks_shown = False  # this answer has rendered blocks: the next is spaced
        if _is_terminal(answer):
            self._markdown = MarkdownBlocks()
            self._answer_console = Console(file=answer, highlight=False)

    def thought_text(self, text: str) -> None:
        from rich.text import Text

        if not text:
            return
        self._stop_spinner()
        self._flush_answer()
        self._break_answer_line()
        self.console.print(Text(text, style="dim italic"), end="")
        self._thinking = not text.endswith("\n")

    def answer_text(self, text: str) -> None:
        self._stop_spinner()
        self._end_thought()
        if self._markdown is None:
            super().answer_text(text)
            return
        self._render_markdown(self._markdown.feed(text))

    def call_started(self, title: str) -> None:
        from rich.text import Text

        self._stop_spinner()
        self._print(Text.assemble(("⏺ ", "bold cyan"), (title, "bold")))
        self._status = self.console.status(Text(title, style="dim"), spinner="dots")
        self._status.start()

    def call_finished(self, title: str, status: str, items: list[tuple[str, str]]) -> None:
        from rich.padding import Padding
        from rich.syntax import Syntax
        from rich.text import Text

        self._stop_spinner()
        ok = status == "completed"
        self._print(Text.assemble(("  ✓ " if ok else "  ✗ ", "green" if ok else "bold red"), (title, "dim")))
        for what, text in items:
            if what == "diff":
                body: Any = Syntax(text.rstrip("\n"), "diff", theme="ansi_dark", background_color="default")
            else:
                body = Text(text, style="dim")
            self._print(Padding(body, (0, 0, 0, 4)))

    def output_line(self, text: str) -> None:
        from rich.text import Text

        # Printed above the spinner, which keeps turning while the command runs.
        self._print(Text("    " + text, style="dim"))

    def plan(self, entries: list[dict[str, Any]]) -> None:
        from rich.text import Text

        self._stop_spinner()
        self._print(Text("plan", style="bold"))
        for entry in entries:
            done = entry.get("status") == "completed"
            mark = PLAN_MARKS.get(entry.get("status", ""), "[ ]")
            self._print(Text(f"  {mark} {entry.get('content', '')}", style="dim strike" if done else ""))

    def line(self, text: str) -> None:
        from rich.text import Text

        self._stop_spinner()
        self._print(Text(text, style="yellow"))

    def diff(self, text: str) -> None:
        from rich.padding import Padding
        from rich.syntax import Syntax

        self._stop_spinner()
        syntax = Syntax(text.rstrip("\n"), "diff", theme="ansi_dark", background_color="default")
        self._print(Padding(syntax, (0, 0, 0, 2)))

    def finish(self) -> None:
        self._stop_spinner()
        self._flush_answer()
        self._end_thought()
        super().finish()

    def _print(self, renderable: Any) -> None:
        self._flush_answer()
        self._end_thought()
        self._break_answer_line()
        self.console.print(renderable)

    def _end_thought(self) -> None:
        if self._thinking:
            self.console.print()
            self._thinking = False

    def _flush_answer(self) -> None:
        """The answer's last, open block, rendered: something else comes now."""
        if self._markdown is not None:
            self._render_markdown(self._markdown.rest())
            self._blocks_shown = False

    def _render_markdown(self, blocks: str) -> None:
        from rich.markdown import Markdown

        if not blocks.strip():
            return
        if self._blocks_shown:
            self._answer_console.print()
        self._answer_console.print(Markdown(blocks))
        self._blocks_shown = True

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


class JsonView:
    """`--json`: each session/update's params as one JSON line on `out`; notices to `progress`."""

    verbatim = True  # gets every update, even those the client says in its own words

    def __init__(self, out: TextIO, progress: TextIO) -> None:
        self.out = out
        self.progress = progress

    def update(self, update: dict[str, Any], params: dict[str, Any]) -> None:
        self.out.write(json.dumps(params, ensure_ascii=False) + "\n")
        self.out.flush()

    def notice(self, text: str) -> None:
        self.progress.write(text + "\n")
        self.progress.flush()

    def diff(self, text: str) -> None:
        self.notice(text.rstrip("\n"))

    def finish(self) -> None:
        self.out.flush()


def make_view(answer: TextIO, progress: TextIO, *, as_json: bool = False) -> PlainView | JsonView:
    if as_json:
        return JsonView(answer, progress)
    return RichView(answer, progress) if progress.isatty() else PlainView(answer, progress)


def _text(update: dict[str, Any]) -> str:
    content = update.get("content") or {}
    return str(content.get("text", "")) if isinstance(content, dict) else ""


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:
        return False


def _same_terminal(a: TextIO, b: TextIO) -> bool:
    try:
        return a.isatty() and b.isatty()
    except ValueError:
        return False
