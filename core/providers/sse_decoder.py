"""The text/event-stream wire format, read incrementally into events (WHATWG HTML, "event
stream interpretation"), for the providers' streams (core/providers/sse.py).
"""

from __future__ import annotations

from dataclasses import dataclass

_LINE_ENDS = (b"\n", b"\r")


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    event: str  # "message" when the event named none, as the spec says
    data: str  # the data lines, joined by "\n"
    id: str = ""


class SSEDecoder:
    """An incremental text/event-stream parser (WHATWG HTML, "event stream interpretation").

    Feed it the body in pieces of any size, cut anywhere (inside a line, inside a UTF-8
    character, between the CR and LF of a CRLF); it returns the events each piece
    completes. Lines end in LF, CR or CRLF; `:` starts a comment; a blank line dispatches.
    """

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # the start of a line not yet ended
        self._skip_lf = False  # the last piece ended in CR: a LF opening the next belongs to it
        self._first_line = True
        self._event = ""
        self._data: list[str] = []
        self._last_id = ""

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        has_cr = b"\r" in chunk
        if not has_cr and b"\n" not in chunk:
            if chunk:
                self._partial.append(chunk)  # joined once the line ends: no quadratic copying
            return []
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial = []
        if has_cr:
            lines = chunk.splitlines(keepends=True)  # bytes split on LF, CR and CRLF only
            if not lines[-1].endswith(_LINE_ENDS):
                self._partial.append(lines.pop())
            elif lines[-1].endswith(b"\r"):
                self._skip_lf = True
            lines = [line.rstrip(b"\r\n") for line in lines]
        else:  # LF only, as nearly every server sends: the common case, kept cheap
            lines = chunk.split(b"\n")
            if tail := lines.pop():
                self._partial.append(tail)
        events: list[ServerSentEvent] = []
        for line in lines:
            if line.startswith(b"data: ") and not self._first_line:
                self._data.append(line[6:].decode("utf-8", "replace"))
            elif event := self._line(line):
                events.append(event)
        return events

    def finish(self) -> list[ServerSentEvent]:
        """Events left when the body ended.

        Unlike a browser, which drops an event the body ended before its blank line, this
        dispatches it: servers that close right after their last `data:` line exist, and a
        body cut inside an event shows up anyway, as JSON that does not parse.
        """
        events: list[ServerSentEvent] = []
        if self._partial:
            line, self._partial = b"".join(self._partial), []
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        line = raw.decode("utf-8", "replace")  # lines end on ASCII bytes: never inside a character
        if self._first_line and line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None  # a comment: keep-alives, "OPENROUTER PROCESSING"
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None  # "retry" and unknown fields: nothing here ever reconnects

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:  # a blank line after only comments or an event name
            self._event = ""
            return None
        event = ServerSentEvent(self._event or "message", "\n".join(self._data), self._last_id)
        self._event = ""
        self._data = []
        return event
