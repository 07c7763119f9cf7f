"""What each turn needs besides the conversation, in one place (a plain prompt runs
this module and no other of context, memory and the watcher):

- the preamble the loop puts before the user's text: files the user changed since the
  last turn, memory saved elsewhere that the model has not seen;
- the token estimate of a request, checked before every model call to decide on
  compression;
- the turn-facing halves of the memory files and of the workspace watcher (their
  readers and bookkeeping; writing memory is `core.memory`, watching is `core.watch`).
"""

from __future__ import annotations

import json

from core.messages import Message, TextPart
from core.providers.base import ToolSpec

# ---------------------------------------------------------------------------
# The turn's preamble

MAX_CHANGED_FILES = 20


def turn_preamble(changed_files: list[str], recalled_memory: str | None) -> str | None:
    """Context the loop puts before the user's message text; None when there is none."""
    parts = []
    files = list(dict.fromkeys(f for f in changed_files if f))
    if files:
        shown = files[:MAX_CHANGED_FILES]
        lines = [f"- {name}" for name in shown]
        if len(files) > len(shown):
            lines.append(f"- … and {len(files) - len(shown)} more")
        parts.append(
            "Files changed in the workspace since your last turn (by the user or another program; "
            "re-read them before relying on earlier contents):\n" + "\n".join(lines)
        )
    if recalled_memory and recalled_memory.strip():
        parts.append("Recalled from memory:\n" + recalled_memory.strip())
    if not parts:
        return None
    return f"{_TURN_CONTEXT_OPEN}\n" + "\n\n".join(parts) + f"\n{_TURN_CONTEXT_CLOSE}"


_TURN_CONTEXT_OPEN, _TURN_CONTEXT_CLOSE = "<turn-context>", "</turn-context>"


def without_turn_preamble(text: str) -> str:
    """What the user typed, without the context the loop put before it."""
    if not text.startswith(_TURN_CONTEXT_OPEN + "\n"):
        return text
    end = text.find(_TURN_CONTEXT_CLOSE)
    return text if end < 0 else text[end + len(_TURN_CONTEXT_CLOSE) :].lstrip("\n")


# ---------------------------------------------------------------------------
# Token estimates

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_000  # providers charge roughly 500-1,600 per image; one flat guess
MESSAGE_OVERHEAD_TOKENS = 4  # role and framing
TOOL_CALL_OVERHEAD_TOKENS = 8


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_message_tokens(message: Message) -> int:
    chars = len(message.reasoning) if message.reasoning else 0
    tokens = MESSAGE_OVERHEAD_TOKENS
    content = message.content
    if isinstance(content, str):
        chars += len(content)
    else:
        for part in content:
            if isinstance(part, TextPart):
                chars += len(part.text)
            else:
                tokens += IMAGE_TOKENS
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
        tokens += TOOL_CALL_OVERHEAD_TOKENS
    return tokens + -(-chars // CHARS_PER_TOKEN)


def estimate_tool_tokens(spec: ToolSpec) -> int:
    schema = json.dumps(spec.parameters, separators=(",", ":"))
    return TOOL_CALL_OVERHEAD_TOKENS + estimate_tokens(spec.name + spec.description + schema)


def estimate_messages_tokens(system: str, messages: list[Message], tools: list[ToolSpec]) -> int:
    """The estimated size of a whole request: cheap enough for every model call.

    A message costs a few len() calls (images count flat, never by their base64) and a
    tool spec one small JSON dump, so there is nothing worth caching: 500 messages and
    20 tools take about 5% of the time serialising the same messages takes (measured by
    benchmarks/bench_context.py); an id()-keyed cache could save a fraction of a
    millisecond per call at most.
    """
    total = estimate_tokens(system)
    for message in messages:
        total += estimate_message_tokens(message)
    for spec in tools:
        total += estimate_tool_tokens(spec)
    return total


def should_compress(context_tokens: int, context_window: int, threshold: float) -> bool:
    if context_window <= 0:
        return False
    return context_tokens >= context_window * threshold
