"""What reaches a running turn from outside it, in one place: the user's steers, a tool's
request that the turn end with a text (clarify in an editor that cannot ask), and what
subagents spent. The turn takes each when it is ready for it."""

from __future__ import annotations

from hermes_core.models import Usage


class TurnInbox:
    def __init__(self) -> None:
        self._steers: list[str] = []
        self._closing: str | None = None
        self._child_usage = Usage()

    def steer(self, text: str) -> None:
        """The user's addition to the running turn (/steer): the model reads it next call."""
        self._steers.append(text)

    @property
    def has_steers(self) -> bool:
        return bool(self._steers)

    def take_steers(self) -> list[str]:
        steers, self._steers = self._steers, []
        return steers

    def end_turn_with(self, text: str) -> None:
        """A tool asks that the turn end once its calls are done, with this as the answer."""
        self._closing = text

    def take_closing(self) -> str | None:
        text, self._closing = self._closing, None
        return text

    def add_child_usage(self, usage: Usage) -> None:
        self._child_usage += usage

    def take_child_usage(self) -> Usage | None:
        usage, self._child_usage = self._child_usage, Usage()
        return usage if usage != Usage() else None
