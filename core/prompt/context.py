"""The session's system prompt: who the agent is, how to work, its tools, the
environment, the project's instruction files (AGENTS.md and kin), saved memory, skills.

It is built once per session and must come out byte-identical for the same inputs, so
provider prompt caches keep hitting: no clock time, no set or dict ordering that could
vary, nothing read twice. What changes between turns (files the user edited, recalled
memory) goes into the user's message instead (`hermes_core.loop.turn_context`). Compression of a
long history is `hermes_core.loop.compression`.
"""

from __future__ import annotations

import logging
import os
import platform as _platform
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from hermes_core.prompt.memory import MemoryStore
from hermes_core.prompt.repository import repository_root
from hermes_core.prompt.skills import Skill
from hermes_core.workspace import WorkspaceError, WorkspaceScope

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------
# Context files

CONTEXT_FILE_NAMES = ("AGENTS.md", ".hermes.md", "CLAUDE.md", ".cursorrules")
CONTEXT_FILE_MAX_BYTES = 20_000


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


def read_context_file(path: Path, limit: int = CONTEXT_FILE_MAX_BYTES, *, root: Path | None = None) -> str:
    """The file's text, cut at `limit` bytes with a note saying so. The workspace wrote it, so
    it is opened beneath `root` (default: the repository root above it, else its folder) by
    the file tools' rules: a symlink out (`AGENTS.md -> ~/.ssh/id_ed25519`), a hard link or
    a FIFO raises (OSError or WorkspaceError) instead of being read."""
    path = Path(path)
    if root is None:
        root = repository_root(path.parent) or path.parent
    fd = WorkspaceScope(root).open_file(path)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        data = handle.read(limit + 1)
    from hermes_core.sandbox.git_credentials import shown

    # A committed `AGENTS.md -> .git/config` stays inside, so it is read: without its tokens.
    if len(data) <= limit:
        return shown(data.decode("utf-8", errors="replace").strip())
    # "ignore" drops a multi-byte character the cut split in half.
    text = shown(data[:limit].decode("utf-8", errors="ignore").rstrip())
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
    cwd = Path(cwd).resolve()
    root = repository_root(cwd) or cwd
    for path in find_context_files(cwd):
        try:
            text = read_context_file(path, root=root)
        except (OSError, WorkspaceError) as exc:
            log.warning("context file %s left out: %s", path, exc)
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
