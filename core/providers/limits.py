"""What an endpoint's error tells about its limits, and the context windows learned from it.

An overflow error often states the real limit ("maximum context length is 8192 tokens",
"prompt is too long: 210000 tokens > 200000 maximum") or the output tokens still free
("max_tokens: 8192 > 4096 available"). A stated context limit is confirmed: it is kept in
`context_limits.json` under the home and used for compression decisions from then on. An
overflow without one steps the model down a tier, in memory only (a guess is not worth
keeping across runs).

Learned windows go into `settings.context_windows`, which every context-window lookup
already reads (core/models.py `context_window`); a window set in the config is only ever
lowered by what the endpoint itself said.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from pathlib import Path

from hermes_core.config import Settings
from hermes_core.models import context_window

log = logging.getLogger(__name__)

FILE_NAME = "context_limits.json"
# Windows to step down through when an overflow names no limit.
TIERS = (1_048_576, 524_288, 262_144, 200_000, 128_000, 65_536, 32_768, 16_384, 8_192, 4_096)
MIN_LIMIT = 1_024  # below this a parsed number is not a context window

_NUMBER = r"(\d[\d,_]*)"
_CONTEXT_LIMIT = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"maximum context length is {_NUMBER}",  # OpenAI, vLLM, most compatible servers
        rf"prompt is too long: {_NUMBER} tokens > {_NUMBER} maximum",  # Anthropic (2nd number)
        rf"exceed context limit: {_NUMBER} \+ {_NUMBER} > {_NUMBER}",  # Anthropic input + max_tokens
        rf"maximum number of tokens allowed \({_NUMBER}\)",  # Gemini
        rf"context (?:length|window|size) (?:of|is|limit of) {_NUMBER}",
        rf"{_NUMBER}[- ]token context",
        rf"maximum (?:allowed )?(?:input|prompt) (?:length|tokens?) (?:is|of) {_NUMBER}",
    )
]
# "max_tokens: 8192 > 4096 available" / "max_tokens (8192) exceeds the 4096 available"
_OUTPUT_AVAILABLE = re.compile(
    rf"max(?:_completion)?_tokens\W+{_NUMBER}\s*>\s*{_NUMBER}\s+available", re.IGNORECASE
)
# Anthropic: "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000"
_INPUT_PLUS_OUTPUT = re.compile(rf"{_NUMBER}\s*\+\s*{_NUMBER}\s*>\s*{_NUMBER}")
# OpenAI-compatible: "you requested 5000 tokens (1000 in the messages, 4000 in the completion)"
_REQUESTED = re.compile(rf"{_NUMBER} in the messages,? {_NUMBER} in the completion", re.IGNORECASE)
_SIGNATURE = re.compile(
    r"(?:invalid|missing|corrupt\w*|expired)\W+(?:\w+\W+){0,3}?(?:thought_)?signature"
    r"|signature\W+(?:\w+\W+){0,4}?(?:invalid|not valid|could not be verified|missing)"
    r"|encrypted[_ ]content\W+(?:\w+\W+){0,6}?(?:invalid|could not be (?:verified|decrypted))"
    r"|(?:invalid|could not (?:verify|decrypt))\W+(?:\w+\W+){0,3}?encrypted[_ ]content",
    re.IGNORECASE,
)


def _int(text: str) -> int:
    return int(text.replace(",", "").replace("_", ""))


def stated_context_limit(message: str) -> int | None:
    """The context window an overflow message states, if it states one."""
    for pattern in _CONTEXT_LIMIT:
        match = pattern.search(message)
        if match:
            limit = _int(match.groups()[-1])
            return limit if limit >= MIN_LIMIT else None
    return None


def stated_output_cap(message: str) -> int | None:
    """The output tokens still available, from an error that says the requested maximum
    output does not fit (explicitly, or as input + output > limit)."""
    match = _OUTPUT_AVAILABLE.search(message)
    if match:
        return _positive(_int(match.group(2)))
    if "max_tokens" in message.lower() or "completion" in message.lower():
        match = _INPUT_PLUS_OUTPUT.search(message)
        if match:
            return _positive(_int(match.group(3)) - _int(match.group(1)))
        requested = _REQUESTED.search(message)
        limit = stated_context_limit(message)
        if requested and limit:
            return _positive(limit - _int(requested.group(1)))
    return None


def _positive(value: int) -> int | None:
    return value if value > 0 else None


def says_invalid_signature(message: str) -> bool:
    """Whether a 400 rejects replayed reasoning (a thinking signature, an encrypted
    reasoning item, a Gemini thought signature)."""
    return bool(_SIGNATURE.search(message))


def next_tier(window: int) -> int | None:
    """The largest tier below `window`, or None at the bottom."""
    return next((tier for tier in TIERS if tier < window), None)


class ContextLimits:
    """The context windows learned for one home, shared through `settings.context_windows`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.path = settings.home / FILE_NAME

    def stored(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s: %s", self.path, exc)
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int) and v > 0}

    def apply_stored(self) -> None:
        """Lower the settings' windows to what endpoints confirmed in earlier runs."""
        for model, limit in self.stored().items():
            self._lower(model, limit)

    def learn(self, model: str, *, stated: int | None) -> int | None:
        """After an overflow: the window now used for `model` (None when unchanged).
        A stated limit is confirmed and stored; otherwise the window steps down a tier."""
        if stated is not None:
            self._lower(model, stated)
            self._store(model, stated)
            return stated
        lower = next_tier(context_window(model, self.settings.context_windows))
        if lower is None:
            return None
        self._lower(model, lower)
        return lower

    def _lower(self, model: str, limit: int) -> None:
        current = context_window(model, self.settings.context_windows)
        if limit < current or model not in self.settings.context_windows:
            self.settings.context_windows = {**self.settings.context_windows, model: min(limit, current)}

    def _store(self, model: str, limit: int) -> None:
        data = {**self.stored(), model: limit}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".context_limits.")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            Path(temp).replace(self.path)
        except OSError as exc:  # the limit still holds for this run
            log.warning("could not save the context limit for %s: %s", model, exc)
