"""A stored session, shown again: the `session/update` stream `session/load` sends.

Everything goes out before the load's response, in the order an editor rebuilds its
view: the conversation (user and agent chunks, thoughts, tool calls with their final
status, diffs and output), then the latest plan, the context usage, and the commands.

A replay draws what the live thread drew with the same code: a tool call's card is fed
to the session's `ToolCards` from the events stored with it (`hermes_core.loop.tool_record`),
a cancel's closed cards from the notice that recorded them (`records.close_cards`), a
prompt is the blocks the user sent (`bridge/content.with_prompt_shown`), a `/steer` is
the command and its answer. A call that never got a result (a crash) ends `failed`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.channel import said
from hermes_acp.bridge.events import ANSWER, THOUGHT, chunk
from hermes_acp.session.records import CLOSED_CALLS
from hermes_acp.session.slash.menu import commands_update
from hermes_core.events import ToolCallProgress
from hermes_core.loop.tool_record import finished_event, started_event
from hermes_core.messages import ImagePart

if TYPE_CHECKING:
    from hermes_acp.bridge.events import EventTranslator
    from hermes_core.events import PlanEntry
    from hermes_core.messages import ContentPart, Message

INTERRUPTED = "Interrupted: this tool call did not complete."

Update = dict[str, Any]
Results = dict[str, "Message"]  # tool call id -> its stored result


def replay_updates(
    translator: EventTranslator,
    messages: Sequence[Message],
    *,
    plan: Iterable[PlanEntry] = (),
    used_tokens: int,
    context_window: int,
    cost_usd: float | None = None,
) -> list[Update]:
    session_id = translator.session_id
    updates = replay_conversation(translator, messages)
    entries = list(plan)
    if entries:
        updates.append(translator.plan_update(entries))
    usage: dict[str, Any] = {
        "sessionUpdate": "usage_update",
        "used": max(0, used_tokens),
        "size": max(0, context_window),
    }
    if cost_usd is not None:
        usage["cost"] = {"amount": float(cost_usd), "currency": "USD"}
    updates.append({"sessionId": session_id, "update": usage})
    updates.append(commands_update(session_id))
    return updates


def replay_conversation(translator: EventTranslator, messages: Iterable[Message]) -> list[Update]:
    """The whole history as updates; calls that never got a result end `failed`."""
    messages = list(messages)
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    updates = [update for message in messages for update in replay_message(translator, message, results)]
    return updates + translator.cards.close_open(INTERRUPTED)


def replay_message(
    translator: EventTranslator, message: Message, results: Results | None = None
) -> list[Update]:
    """One stored message as updates (user chunks; thought, text and tool calls; a tool
    result's final card). `results`: the calls' stored results, whose records hold the
    calls' starts as the live cards showed them."""
    cards = translator.cards
    display = message.display or {}
    # Each stored message is one ACP message: its chunks share a messageId.
    message_id = uuid.uuid4().hex
    if message.role == "user":
        return [cards.wrap(update) for update in _user_updates(message, message_id)]
    if message.role == "assistant" and display.get("notice") == CLOSED_CALLS:
        return _closed(translator, display)
    if message.role == "assistant":
        updates = []
        if message.reasoning:
            thought = {"type": "text", "text": translator.replayed(THOUGHT, message.reasoning)}
            updates.append(cards.wrap(chunk("agent_thought_chunk", thought, uuid.uuid4().hex)))
        for block in _blocks(message.content):
            if block["type"] == "text":  # the model's Markdown: no image in it may load
                block["text"] = translator.replayed(ANSWER, block["text"])
            updates.append(cards.wrap(chunk("agent_message_chunk", block, message_id)))
        own = display.get("tool_calls") or {}
        for call in message.tool_calls:
            # The result's record is complete; the assistant's own stands in for a call
            # that a crash or cancel cut off before its result.
            result = (results or {}).get(call.id)
            record = (result.display if result is not None else None) or own.get(call.id) or {}
            updates += cards.started(started_event(record, call.id, call.name, call.arguments))
        return updates
    if message.role == "tool" and message.tool_call_id:
        call_id = message.tool_call_id
        if call_id not in cards.open:  # no stored start: the card is drawn from the result alone
            updates = cards.started(started_event(display, call_id, message.name or "tool", ""))
        else:
            updates = []
        output = display.get("output")
        if isinstance(output, str) and output:
            updates += cards.progress(ToolCallProgress(call_id, output=output))
        return updates + cards.finished(finished_event(display, call_id, message.text, message.is_error))
    return []


def _closed(translator: EventTranslator, display: dict[str, Any]) -> list[Update]:
    """The cards a cancel or an error closed, closed again as they were: their output so
    far, then the same message."""
    cards = translator.cards
    outputs = display.get("outputs")
    message = display.get("message")
    if not isinstance(outputs, dict) or not isinstance(message, str):
        return []
    closing = [call_id for call_id in outputs if call_id in cards.open]
    updates = []
    for call_id in closing:
        output = outputs[call_id]
        if isinstance(output, str) and output:
            updates += cards.progress(ToolCallProgress(call_id, output=output))
    return updates + cards.close_open(message, only=closing)


def _user_updates(message: Message, message_id: str) -> list[Update]:
    display = message.display or {}
    if display.get("tool_images"):
        return []  # images the tools returned, for the model: their calls' cards stand for them
    steers = display.get("steers")
    if isinstance(steers, list):
        # What the user sent while a turn ran, and what they were answered, each a message
        # of its own; the jobs' ends in the same message are shown on their cards.
        from hermes_acp.session.slash.run import steer_text

        updates: list[Update] = []
        for text in steers:
            if isinstance(text, str):
                typed = {"type": "text", "text": f"/steer {text}"}
                updates.append(chunk("user_message_chunk", typed, uuid.uuid4().hex))
                updates.append(said(steer_text(True)))
        return updates
    blocks = display.get("prompt_blocks")
    if isinstance(blocks, list):
        shown = [b for b in blocks if isinstance(b, dict) and b.get("type") in ("text", "resource_link")]
        # Images the user attached are the message's own (not kept twice).
        shown += [block for block in _blocks(message.content) if block["type"] == "image"]
    else:
        shown = _typed_blocks(message)
    return [chunk("user_message_chunk", block, message_id) for block in shown]


def _typed_blocks(message: Message) -> list[Update]:
    """A user message's blocks as the user sent them: the turn context the loop added
    (changed files, recalled memory) is for the model, not the editor's transcript."""
    from hermes_core.loop.turn_context import without_turn_preamble

    blocks = []
    for block in _blocks(message.content):
        if block["type"] == "text":
            block = {"type": "text", "text": without_turn_preamble(block["text"])}
            if not block["text"]:
                continue
        blocks.append(block)
    return blocks


def _blocks(content: str | list[ContentPart]) -> list[Update]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content:
        if isinstance(part, ImagePart):
            blocks.append({"type": "image", "data": part.data, "mimeType": part.mime_type})
        elif part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks
