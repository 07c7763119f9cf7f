"""What each slash command says back. Texts only: the manager does the changes.

Every function returns Markdown for one agent message; none needs a model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_acp.bridge.commands import AVAILABLE_COMMANDS
from hermes_acp.session.options import MODES

if TYPE_CHECKING:
    from core.models import Usage
    from core.tools.registry import ToolRegistry


def help_text(mode: str, model: str, extra: list[dict[str, Any]] | None = None) -> str:
    lines = [
        "**hermes** is a coding agent: it reads and edits files in this workspace, runs commands, "
        "and asks before doing anything the current mode does not allow.",
        "",
        f"Mode: `{mode}` · Model: `{model}`",
        "",
        "Commands:",
    ]
    lines += [_usage_line(command) for command in AVAILABLE_COMMANDS]
    if extra:
        lines += ["", "Skills and prompts (sent to the model as your message):"]
        lines += [_usage_line(command) for command in extra]
    lines += ["", "Modes:"]
    lines += [f"- `{mode_id}` — {description}" for mode_id, _, description in MODES]
    return "\n".join(lines)


def _usage_line(command: dict[str, Any]) -> str:
    hint = command.get("input", {}).get("hint")
    usage = f"/{command['name']}" + (f" <{hint}>" if hint else "")
    return f"- `{usage}` — {command['description']}"


def unknown_text(name: str) -> str:
    return (
        f"Unknown command `/{name}`; nothing was sent to the model. `/help` lists the commands. "
        "To send text that starts with a slash, put something before it."
    )


def command_failed_text(name: str, reason: str) -> str:
    return f"`/{name}` could not be run: {reason}"


def mode_text(new_mode: str | None, current: str, requested: str) -> str:
    if new_mode is not None:
        return f"Mode set to `{new_mode}`."
    valid = ", ".join(f"`{m}`" for m, _, _ in MODES)
    if not requested:
        return f"The mode is `{current}`. Choose one of {valid}: `/mode <name>`."
    return f"There is no mode `{requested}`; the mode stays `{current}`. Choose one of {valid}."


def model_text(new_model: str | None, current: str, offered: list[str]) -> str:
    if new_model is not None:
        return f"Model set to `{new_model}` for the next prompts."
    listed = "\n".join(f"- `{m}`" for m in offered)
    return f"The model is `{current}`. Switch with `/model <id>`; known models:\n{listed}"


def tools_text(tools: ToolRegistry, *, read_only: bool) -> str:
    offered = [tool for tool in tools if tool.read_only or not read_only]
    lines = [f"{len(offered)} tools" + (" (plan mode: read-only tools only)" if read_only else "") + ":"]
    for tool in offered:
        summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        lines.append(f"- `{tool.name}` — {summary}")
    return "\n".join(lines)


def context_text(used: int, window: int, messages: int) -> str:
    share = (100.0 * used / window) if window else 0.0
    return (
        f"Context: {used:,} of {window:,} tokens in use ({share:.1f}%), "
        f"{messages} message{'s' if messages != 1 else ''} in the conversation."
    )


def cost_text(total: Usage, cost_usd: float | None) -> str:
    lines = [
        f"Tokens this session: {total.input_tokens:,} in"
        f" ({total.cached_tokens:,} from the prompt cache), {total.output_tokens:,} out.",
    ]
    if total.reasoning_tokens:
        lines.append(f"Reasoning tokens: {total.reasoning_tokens:,}.")
    if cost_usd is None:
        lines.append("Cost: unknown (no price known for this model; set `prices` in config.toml).")
    else:
        lines.append(f"Cost: ${cost_usd:.4f}.")
    return "\n".join(lines)


def compact_text(before: int, after: int, changed: bool) -> str:
    if not changed:
        return "Nothing to compact: the conversation is still short enough to keep whole."
    return f"Compacted the conversation: {before} messages are now {after}, with a summary of the middle."


CLEARED = "Conversation cleared. The next prompt starts from an empty history."


def queue_text(running: bool, waiting: list[str]) -> str:
    if not waiting:
        return "Nothing is waiting." + (" A turn is running." if running else "")
    lines = [f"{len(waiting)} prompt{'s' if len(waiting) != 1 else ''} waiting for the running turn:"]
    lines += [f"{number}. {preview}" for number, preview in enumerate(waiting, 1)]
    return "\n".join(lines)


def steer_text(added: bool) -> str:
    if added:
        return "Added to the running turn: the model reads it at its next step."
    return "Nothing to add it to: write what the agent should know after `/steer`."
