"""A stored session, shown again: the `session/update` stream `session/load` sends.

Everything goes out before the load's response, in the order an editor rebuilds its
view: the conversation (user and agent chunks, thoughts, tool calls with their final
status, diffs and output), then the latest plan, the context usage, and the commands.
Each tool call's card is built from the `display` stored with its result; a call that
never got a result (a crash, a cancel) ends `failed`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.events import chunk
from hermes_acp.bridge.tool_cards import known_kind, location, result_content, text_content
from hermes_acp.session.slash.menu import commands_update
from hermes_core.events import FileDiff
from hermes_core.messages import ImagePart

if TYPE_CHECKING:
    from hermes_acp.bridge.events import EventTranslator
    from hermes_core.events import PlanEntry
    from hermes_core.messages import ContentPart, Message

INTERRUPTED = "Interrupted: this tool call did not complete."
_TOOL_STATUSES = frozenset({"completed", "failed"})

Update = dict[str, Any]
Displays = dict[str, dict[str, Any]]  # tool call id -> the display stored with its result


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
    displays = {
        m.tool_call_id: m.display for m in messages if m.role == "tool" and m.tool_call_id and m.display
    }
    updates = [update for message in messages for update in replay_message(translator, message, displays)]
    return updates + translator.cards.close_open(INTERRUPTED)


def replay_message(
    translator: EventTranslator, message: Message, displays: Displays | None = None
) -> list[Update]:
    """One stored message as updates (user chunks; thought, text and tool calls; a tool
    result's final card). `displays`: the results' displays, for the calls' cards."""
    cards = translator.cards
    # Each stored message is one ACP message: its chunks share a messageId.
    message_id = uuid.uuid4().hex
    if message.role == "user":
        if message.display and message.display.get("tool_images"):
            return []  # images the tools returned, for the model: their calls' cards stand for them
        return [
            cards.wrap(chunk("user_message_chunk", block, message_id)) for block in _typed_blocks(message)
        ]
    if message.role == "assistant":
        updates = []
        if message.reasoning:
            thought = {"type": "text", "text": message.reasoning}
            updates.append(cards.wrap(chunk("agent_thought_chunk", thought, uuid.uuid4().hex)))
        for block in _blocks(message.content):
            updates.append(cards.wrap(chunk("agent_message_chunk", block, message_id)))
        own_cards = (message.display or {}).get("tool_calls") or {}
        for call in message.tool_calls:
            # The result's display is complete; the assistant's own card stands in
            # for a call that a crash or cancel cut off before its result.
            display = (displays or {}).get(call.id) or own_cards.get(call.id) or {}
            kind = known_kind(display.get("kind"))
            cards.opened(call.id, kind)
            update = {
                "sessionUpdate": "tool_call",
                "toolCallId": call.id,
                "title": display.get("title") or call.name,
                "kind": kind,
                "status": "pending",
                "rawInput": display.get("raw_input", _arguments(call.arguments)),
            }
            locations = _display_locations(display)
            if locations:
                update["locations"] = locations
            updates.append(cards.wrap(update))
        return updates
    if message.role == "tool" and message.tool_call_id:
        cards.open.pop(message.tool_call_id, None)
        return [cards.wrap(_replayed_result(message))]
    return []


def _replayed_result(message: Message) -> Update:
    display = message.display or {}
    status = display.get("status")
    if status not in _TOOL_STATUSES:
        status = "failed" if message.is_error else "completed"
    result = message.text
    raw_output = display.get("raw_output")
    update: Update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": message.tool_call_id,
        "status": status,
        "rawOutput": raw_output if raw_output is not None else {"output": result},
    }
    if display.get("title"):
        update["title"] = display["title"]
        update["kind"] = known_kind(display.get("kind"))
    if "raw_input" in display:
        update["rawInput"] = display["raw_input"]
    locations = _display_locations(display)
    if locations:
        update["locations"] = locations
    stored = display.get("diff")
    diff = FileDiff(stored["path"], stored.get("old_text"), stored["new_text"]) if stored else None
    shown = display.get("shown")
    if isinstance(shown, str):
        content = [text_content(shown)] if shown else []
    else:
        kind = known_kind(display.get("kind"))
        content = result_content(kind, status, result, diff, display.get("exit_code"), display.get("signal"))
    if content:
        update["content"] = content
    return update


def _typed_blocks(message: Message) -> list[Update]:
    """A user message's blocks as the user sent them: the turn context the loop added
    (changed files, recalled memory) is for the model, not the editor's transcript."""
    from hermes_core.turn_context import without_turn_preamble

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


def _display_locations(display: dict[str, Any]) -> list[Update]:
    out = []
    for item in display.get("locations") or ():
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            out.append(location(item["path"], item.get("line")))
        elif isinstance(item, list | tuple) and item and isinstance(item[0], str):
            out.append(location(item[0], item[1] if len(item) > 1 else None))
    return out


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {"arguments": raw}
