"""What the model sees besides the conversation: the system prompt, per-turn context,
token estimates, and compression of a history that outgrew the context window.

The system prompt is built once per session and must come out byte-identical for the
same inputs, so provider prompt caches keep hitting: no clock time, no set or dict
ordering that could vary, nothing read twice. What changes between turns (files the
user edited, recalled memory) goes into the user's message via `turn_preamble`.

Compression is split so the agent loop owns the model call: `plan_compression` picks
the middle to summarise, `summary_request` builds the summariser's request, and
`apply_compression` splices the summary in.
"""

from __future__ import annotations

import json
import logging
import platform as _platform
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from core.memory import MemoryStore
from core.messages import ImagePart, Message, TextPart, repair_alternation
from core.providers.base import ToolSpec
from core.skills import Skill

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------
# Context files

CONTEXT_FILE_NAMES = ("AGENTS.md", ".hermes.md", "CLAUDE.md", ".cursorrules")
CONTEXT_FILE_MAX_BYTES = 20_000


def repository_root(cwd: Path) -> Path | None:
    """The nearest directory at or above cwd holding `.git` (a directory, or a file in
    worktrees and submodules)."""
    cwd = Path(cwd).resolve()
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


def find_context_files(cwd: Path) -> list[Path]:
    """Instruction files from the repository root down to cwd, outermost first.

    Without a repository only cwd itself is searched: a home directory's AGENTS.md
    should not leak into every unrelated folder opened in the editor.
    """
    cwd = Path(cwd).resolve()
    root = repository_root(cwd)
    if root is None:
        directories = [cwd]
    else:
        depth = len(cwd.relative_to(root).parts)
        directories = [cwd, *cwd.parents][: depth + 1][::-1]
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for directory in directories:
        for name in CONTEXT_FILE_NAMES:
            path = directory / name
            try:
                if not path.is_file():
                    continue
                stat = path.stat()
            except OSError:
                continue
            # Symlinks and hard links (CLAUDE.md -> AGENTS.md) count once.
            identity = (stat.st_dev, stat.st_ino)
            if identity in seen:
                continue
            seen.add(identity)
            found.append(path)
    return found


def read_context_file(path: Path, limit: int = CONTEXT_FILE_MAX_BYTES) -> str:
    """The file's text, cut at `limit` bytes with a note saying so."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace").strip()
    size = Path(path).stat().st_size
    # "ignore" drops a multi-byte character the cut split in half.
    text = data[:limit].decode("utf-8", errors="ignore").rstrip()
    return f"{text}\n\n[Truncated: showing the first {limit} of {size} bytes of {path}.]"


# ---------------------------------------------------------------------------
# System prompt

_IDENTITY = """\
You are hermes-acp, a coding agent working inside the user's editor. You read, search \
and edit the files of the user's workspace and run commands in it to get software work \
done: fixing bugs, building features, refactoring, explaining code, answering questions \
about the project. The user sees your messages, your tool calls and the diffs you make \
in the editor as you work."""

_HOW_TO_WORK = """\
## How to work
- Understand before you change: read the relevant files and search the codebase before \
editing. Never guess at code you have not seen.
- Make small, targeted edits that follow the project's existing style and conventions; do \
not rewrite whole files for a local change.
- Check your work: run the tests, type checker or build that cover what you changed, and \
fix what you broke.
- For work with several steps, keep a plan and update it as you go.
- When the request is ambiguous or a choice is risky or hard to undo, ask the user \
instead of guessing.
- Be concise. Report what you did and what you found; refer to code by path and line \
(`src/app.py:42`). No filler, no repeating the question back.
- Paths are relative to the working directory unless absolute. Stay inside the workspace \
unless the user asks otherwise."""

# Tool guidance, in the order it is written into the prompt. A line appears only when a
# tool it names is offered, and `{name}` becomes the first of its names that is offered.
_TOOL_GUIDANCE: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("read_file",),
        "Use `read_file` to read files; read a large file in ranges (offset/limit) rather than all at once.",
    ),
    (
        ("search_files", "search", "grep"),
        "Use `{name}` to find where code is defined or used, then read around the matches, "
        "instead of running grep in a shell or reading files one by one.",
    ),
    (
        ("list_files", "glob"),
        "Use `{name}` (with a glob) to find files by name or see a directory's layout, instead of "
        "running ls or find in a shell.",
    ),
    (
        ("patch",),
        "Prefer `patch` for edits to existing files: replace an exact, unique snippet. "
        "Re-read the file if a patch fails to match.",
    ),
    (("write_file",), "Use `write_file` to create new files or to replace a file entirely."),
    (
        ("terminal", "run_command", "shell", "bash"),
        "Use `{name}` to run commands (tests, builds, "
        "git). Use the file tools, not shell commands like cat/sed/echo, to read and edit files. "
        "Long-running servers and watchers go in the background.",
    ),
    (("process",), "Use `process` to check, read the output of, or stop background commands you started."),
    (
        ("todo",),
        "Use `todo` to keep the plan for multi-step work: create it early, mark one "
        "item in progress at a time, and mark items done as soon as they are.",
    ),
    (
        ("memory",),
        "Use `memory` to save durable facts for future sessions: the user's "
        "preferences and corrections, project conventions, commands that work. Not task progress.",
    ),
    (("web_search",), "Use `web_search` for documentation or errors you cannot resolve from the workspace."),
    (
        ("web_extract", "web_fetch", "fetch"),
        "Use `{name}` to read a web page the user or a search pointed to.",
    ),
    (
        ("delegate_task",),
        "Use `delegate_task` to hand a self-contained sub-task (a broad search, "
        "an investigation) to a sub-agent with a fresh context; give it everything it needs.",
    ),
)


def tool_guidance(tool_names: Iterable[str]) -> str:
    """Guidance lines for the offered tools only; "" when none has guidance."""
    offered = set(tool_names)
    lines = []
    known: set[str] = set()
    for names, text in _TOOL_GUIDANCE:
        known.update(names)
        present = [name for name in names if name in offered]
        if present:
            lines.append("- " + text.replace("{name}", present[0]))
    others = sorted(offered - known)
    if others:
        lines.append(
            "- Other tools (" + ", ".join(f"`{name}`" for name in others) + ") do what their "
            "descriptions say; prefer the built-in file tools where both fit."
        )
    if not lines:
        return ""
    return "## Tools\n" + "\n".join(lines)


def _operating_system() -> str:
    system = _platform.system()
    names = {"Darwin": "macOS"}
    return f"{names.get(system, system)} {_platform.release()}".strip()


def _environment(cwd: Path, extra_roots: list[Path], now: datetime, platform: str) -> str:
    lines = [f"- Working directory: {cwd}"]
    root = repository_root(cwd)
    if root is not None:
        lines.append(f"- Git repository root: {root}")
    else:
        lines.append("- Not inside a git repository")
    if extra_roots:
        lines.append("- Additional workspace roots: " + ", ".join(str(Path(r)) for r in extra_roots))
    lines.append(f"- Operating system: {platform}")
    # The date only: a clock time would change the prompt, and the prompt cache with it.
    lines.append(f"- Date at session start: {now.date().isoformat()}")
    return "## Environment\n" + "\n".join(lines)


def _context_section(cwd: Path) -> str:
    blocks = []
    for path in find_context_files(cwd):
        try:
            text = read_context_file(path)
        except OSError as exc:
            log.warning("cannot read context file %s: %s", path, exc)
            continue
        if text:
            blocks.append(f"### {path}\n\n{text}")
    if not blocks:
        return ""
    return (
        "## Project instructions\n"
        "These files from the workspace carry the project's own instructions for agents. Follow "
        "them; a file nearer the working directory wins over an outer one, and the user's "
        "explicit requests win over both.\n\n" + "\n\n".join(blocks)
    )


def _memory_section(memory: MemoryStore | None) -> str:
    if memory is None:
        return ""
    try:
        rendered = memory.render()
    except OSError as exc:
        log.warning("cannot read memory: %s", exc)
        return ""
    if not rendered:
        return ""
    return (
        "## Memory\n"
        "Facts you saved in earlier sessions. Treat them as true unless the workspace or the "
        "user shows otherwise; update them with the memory tool when they are wrong.\n\n" + rendered
    )


def _skills_section(skills: Sequence[Skill]) -> str:
    """Names and descriptions only: a body enters the conversation when the model loads it."""
    if not skills:
        return ""
    lines = [f"- `{skill.name}`: {skill.description}" for skill in skills]
    return (
        "## Skills\n"
        "Instructions for particular kinds of task. When a task fits one, load it with the "
        "`skill` tool before you start and follow it.\n" + "\n".join(lines)
    )


def build_system_prompt(
    *,
    cwd: Path,
    extra_roots: list[Path],
    tool_names: list[str],
    memory: MemoryStore | None,
    now: datetime | None = None,
    platform: str | None = None,
    skills: Sequence[Skill] = (),
) -> str:
    """The session's system prompt. Same inputs (and files on disk), same bytes."""
    cwd = Path(cwd).resolve()
    now = now if now is not None else datetime.now()
    sections = [
        _IDENTITY,
        _HOW_TO_WORK,
        tool_guidance(tool_names),
        _environment(cwd, extra_roots, now, platform or _operating_system()),
        _context_section(cwd),
        _memory_section(memory),
        _skills_section(skills),
    ]
    return "\n\n".join(section for section in sections if section) + "\n"


# ---------------------------------------------------------------------------
# Per-turn context

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


# ---------------------------------------------------------------------------
# Compression

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
SUMMARY_ACK = "Understood. I have the summary of our earlier conversation and will continue from it."
_BRIDGE = "Continuing; the earlier part of our conversation follows as a summary."

MAX_TOOL_RESULT_CHARS = 1_500  # per tool result in the summariser's transcript
MAX_ARGUMENT_CHARS = 600
MAX_TEXT_CHARS = 6_000  # per user or assistant message
MAX_TRANSCRIPT_CHARS = 400_000  # about 100k tokens for the summariser


@dataclass(slots=True)
class CompressionPlan:
    head: list[Message]
    middle: list[Message]
    tail: list[Message]


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(SUMMARY_PREFIX)


def plan_compression(
    messages: list[Message], *, keep_first: int = 2, keep_last: int = 20
) -> CompressionPlan | None:
    """Split the history into a head and tail kept verbatim and a middle to summarise.

    The head is the first exchange, the tail the last `keep_last` messages; both
    boundaries move so an assistant's tool calls and their results stay together
    (the head grows forward over results, the tail grows backward to the call), and
    the tail never starts with a tool result. None when nothing worth summarising
    is left between them.
    """
    count = len(messages)
    start = min(max(keep_first, 0), count)
    while start < count and messages[start].role == "tool":
        start += 1
    end = max(count - max(keep_last, 0), 0)
    while start < end < count and messages[end].role == "tool":
        end -= 1
    if end <= start:
        return None
    middle = messages[start:end]
    # Only an earlier summary (and its acknowledgement) in the middle: summarising it
    # again buys nothing and would loop.
    if all(is_summary(m) or _is_filler(m) for m in middle):
        return None
    return CompressionPlan(head=messages[:start], middle=middle, tail=messages[end:])


def _is_filler(message: Message) -> bool:
    return message.role == "assistant" and not message.tool_calls and message.text in (SUMMARY_ACK, _BRIDGE)


_SUMMARY_SYSTEM = """\
You summarise part of a conversation between a user and a coding agent, so the agent can \
continue the work without the original messages. The agent will see only your summary in \
place of them, so keep every detail it needs and drop the rest.

Write Markdown with exactly these sections:

## Goal
What the user wants overall, and any constraints or preferences they stated.
## Decisions
Choices made and why, including approaches that were rejected.
## Files touched
Each file read, created or changed, by exact path, with what was done to it.
## Commands run
Commands that matter (tests, builds, installs) and their outcome: passed, failed with \
which error.
## Open problems
Errors, failing tests and questions not yet resolved, with exact messages.
## Next steps
What the agent was about to do next.

Be specific: exact paths, names, commands and error messages beat descriptions of them. \
Write "None." under a section with nothing to say. Output only the summary."""


def summary_request(
    middle: list[Message], *, previous_summary: str | None = None
) -> tuple[str, list[Message]]:
    """The summariser call for `middle`: (system prompt, messages).

    An earlier summary found in `middle` (from a previous compression) is folded in
    like `previous_summary`, so facts survive repeated compression.
    """
    earlier = [previous_summary.strip()] if previous_summary and previous_summary.strip() else []
    blocks = []
    for message in middle:
        if is_summary(message):
            earlier.append(message.text[len(SUMMARY_PREFIX) :].strip())
        elif not _is_filler(message):
            blocks.append(_transcript_entry(message))
    transcript = _cap("\n\n".join(blocks), MAX_TRANSCRIPT_CHARS)
    parts = []
    if earlier:
        parts.append(
            "A summary of the conversation before this part (merge it into yours; keep what "
            "still holds):\n<previous-summary>\n" + "\n\n".join(earlier) + "\n</previous-summary>"
        )
    parts.append("The conversation to summarise:\n<conversation>\n" + transcript + "\n</conversation>")
    parts.append("Write the summary now, in the required sections.")
    return _SUMMARY_SYSTEM, [Message(role="user", content="\n\n".join(parts))]


def _transcript_entry(message: Message) -> str:
    text = message.text
    if not isinstance(message.content, str):
        images = sum(1 for part in message.content if isinstance(part, ImagePart))
        if images:
            text = (text + f"\n[{images} image(s)]").strip()
    if message.role == "tool":
        label = f"[tool result: {message.name or 'tool'}{' (error)' if message.is_error else ''}]"
        return f"{label}\n{_cap(text, MAX_TOOL_RESULT_CHARS)}"
    lines = [f"[{message.role}]"]
    if text:
        lines.append(_cap(text, MAX_TEXT_CHARS))
    for call in message.tool_calls:
        lines.append(f"-> {call.name} {_cap(call.arguments, MAX_ARGUMENT_CHARS)}")
    return "\n".join(lines)


def _cap(text: str, limit: int) -> str:
    """Keep the start and the end (where errors and results usually are)."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[-tail:]}"


def apply_compression(plan: CompressionPlan, summary: str) -> list[Message]:
    """head + the summary as a user message (+ an acknowledgement if the tail starts
    with the user) + tail: a history every provider accepts."""
    summary_message = Message(role="user", content=f"{SUMMARY_PREFIX}\n{summary.strip()}")
    result = list(plan.head)
    if result and result[-1].role in ("user", "tool"):
        # Two user turns in a row (tool results travel as user content on some APIs).
        result.append(Message(role="assistant", content=_BRIDGE))
    result.append(summary_message)
    if not plan.tail or plan.tail[0].role != "assistant":
        result.append(Message(role="assistant", content=SUMMARY_ACK))
    result.extend(plan.tail)
    # A no-op for a well-formed history; a guard against a dangling call in the input.
    return repair_alternation(result)
