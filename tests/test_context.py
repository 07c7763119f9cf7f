"""System prompt assembly, context files, token estimates, compression, turn preamble."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from hermes_core.loop.compression import (
    MAX_TOOL_RESULT_CHARS,
    SUMMARY_PREFIX,
    CompressionPlan,
    apply_compression,
    plan_compression,
    summary_request,
)
from hermes_core.loop.turn_context import (
    MAX_CHANGED_FILES,
    estimate_messages_tokens,
    estimate_tokens,
    should_compress,
    turn_preamble,
)
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall, repair_alternation
from hermes_core.prompt.context import CONTEXT_FILE_MAX_BYTES, build_system_prompt, find_context_files
from hermes_core.prompt.memory import MemoryStore
from hermes_core.providers.base import ToolSpec

NOW = datetime(2025, 3, 14, 15, 9, 26)


# --- context files ------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """outer/ (not a repo, has AGENTS.md) > repo/ (.git) > pkg/ > sub/"""
    outer = tmp_path / "outer"
    root = outer / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    (outer / "AGENTS.md").write_text("OUTSIDE THE REPO")
    (root / "AGENTS.md").write_text("root agents")
    (root / "CLAUDE.md").write_text("root claude")
    (root / "pkg" / ".hermes.md").write_text("pkg hermes")
    (root / "pkg" / "sub" / "AGENTS.md").write_text("sub agents")
    (root / "pkg" / "sub" / ".cursorrules").write_text("sub cursor")
    return root


def test_context_files_from_nested_cwd_up_to_git_root_outermost_first(repo: Path) -> None:
    found = find_context_files(repo / "pkg" / "sub")
    assert [p.read_text() for p in found] == [
        "root agents",
        "root claude",
        "pkg hermes",
        "sub agents",
        "sub cursor",
    ]
    assert all("OUTSIDE" not in p.read_text() for p in found)


def test_context_files_without_repository_only_cwd(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("parent")
    child = tmp_path / "child"
    child.mkdir()
    assert find_context_files(child) == []
    (child / "CLAUDE.md").write_text("child")
    assert [p.read_text() for p in find_context_files(child)] == ["child"]


def test_git_file_marks_a_worktree_root(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /elsewhere\n")
    (tmp_path / "AGENTS.md").write_text("worktree root")
    (tmp_path / "a").mkdir()
    assert [p.read_text() for p in find_context_files(tmp_path / "a")] == ["worktree root"]


def test_linked_context_file_counted_once(repo: Path) -> None:
    (repo / "CLAUDE.md").unlink()
    os.symlink(repo / "AGENTS.md", repo / "CLAUDE.md")
    found = find_context_files(repo)
    assert [p.name for p in found] == ["AGENTS.md"]
    prompt = build_system_prompt(cwd=repo, extra_roots=[], tool_names=[], memory=None, now=NOW)
    assert prompt.count("root agents") == 1


def test_large_context_file_truncated_with_note(repo: Path) -> None:
    big = "é" * CONTEXT_FILE_MAX_BYTES + "THE END"
    (repo / "AGENTS.md").write_text(big, encoding="utf-8")
    prompt = build_system_prompt(cwd=repo, extra_roots=[], tool_names=[], memory=None, now=NOW)
    assert "THE END" not in prompt
    assert "Truncated" in prompt and str(repo / "AGENTS.md") in prompt
    assert "\ufffd" not in prompt  # the cut did not leave half a character
    assert len(prompt.encode()) < CONTEXT_FILE_MAX_BYTES + 10_000


# --- system prompt ------------------------------------------------------------


def test_system_prompt_is_byte_identical_and_carries_files_and_memory(repo: Path, tmp_path: Path) -> None:
    memory = MemoryStore(tmp_path / "mem", repo)
    memory.add("user", "prefers tabs")
    memory.add("workspace", "tests run with `make check`")
    kwargs = dict(
        cwd=repo / "pkg",
        extra_roots=[tmp_path / "shared"],
        tool_names=["read_file", "patch", "terminal", "memory"],
        memory=memory,
        platform="TestOS 1",
    )
    first = build_system_prompt(**kwargs, now=NOW)  # type: ignore[arg-type]
    second = build_system_prompt(**kwargs, now=datetime(2025, 3, 14, 23, 59, 59))  # type: ignore[arg-type]
    assert first == second
    for expected in (
        "hermes-acp",
        "root agents",
        "root claude",
        "pkg hermes",
        f"### {repo / 'AGENTS.md'}",
        f"### {repo / 'pkg' / '.hermes.md'}",
        "prefers tabs",
        "tests run with `make check`",
        f"Working directory: {repo / 'pkg'}",
        str(tmp_path / "shared"),
        "TestOS 1",
        "2025-03-14",
    ):
        assert expected in first, expected
    assert "15:09" not in first and "23:59" not in first
    # Instructions from the root come before those nearer the cwd.
    assert first.index("root agents") < first.index("pkg hermes")
    assert "sub agents" not in first  # below cwd


def test_tool_guidance_only_for_present_tools(tmp_path: Path) -> None:
    def prompt(names: list[str]) -> str:
        return build_system_prompt(cwd=tmp_path, extra_roots=[], tool_names=names, memory=None, now=NOW)

    read_only = prompt(["read_file", "search_files"])
    assert "`read_file`" in read_only and "`search_files`" in read_only
    assert "`patch`" not in read_only and "`terminal`" not in read_only and "`todo`" not in read_only
    full = prompt(["read_file", "search_files", "patch", "terminal", "todo", "mcp_jira"])
    assert "`patch`" in full and "`terminal`" in full and "`todo`" in full
    assert "`mcp_jira`" in full
    # Order of the names does not change the bytes.
    assert full == prompt(["mcp_jira", "todo", "terminal", "patch", "search_files", "read_file"])
    assert "## Tools" not in prompt([])


def test_memory_section_absent_when_empty(tmp_path: Path) -> None:
    memory = MemoryStore(tmp_path / "mem", tmp_path)
    prompt = build_system_prompt(cwd=tmp_path, extra_roots=[], tool_names=[], memory=memory, now=NOW)
    assert "## Memory" not in prompt


# --- token estimates ------------------------------------------------------------


def test_estimate_tokens_sane_and_monotonic() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    sizes = [estimate_tokens("x" * n) for n in range(0, 2000, 37)]
    assert sizes == sorted(sizes)
    assert 200 <= estimate_tokens("word " * 200) <= 400


def test_estimate_messages_tokens_grows_with_history_and_tools() -> None:
    spec = ToolSpec(
        "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    history: list[Message] = []
    previous = estimate_messages_tokens("system", history, [])
    for n in range(30):
        history.append(Message(role="user", content=f"question {n}"))
        history.append(
            Message(
                role="assistant", tool_calls=[ToolCall(f"c{n}", "read_file", json.dumps({"path": "a.py"}))]
            )
        )
        history.append(Message(role="tool", content="x" * 400, tool_call_id=f"c{n}", name="read_file"))
        current = estimate_messages_tokens("system", history, [])
        assert current > previous
        previous = current
    assert estimate_messages_tokens("system", history, [spec]) > previous
    # Roughly chars/4: 30 results of 400 chars are at least 3,000 tokens.
    assert 3_000 <= previous <= 6_000


def test_image_costs_flat_not_by_base64_size() -> None:
    small = Message(role="user", content=[TextPart("look"), ImagePart("image/png", "A" * 100)])
    huge = Message(role="user", content=[TextPart("look"), ImagePart("image/png", "A" * 5_000_000)])
    assert estimate_messages_tokens("", [small], []) == estimate_messages_tokens("", [huge], [])
    assert estimate_messages_tokens("", [small], []) > estimate_messages_tokens(
        "", [Message("user", "look")], []
    )


def test_should_compress() -> None:
    assert should_compress(60_000, 100_000, 0.5)
    assert not should_compress(40_000, 100_000, 0.5)
    assert not should_compress(10**9, 0, 0.5)


# --- compression ---------------------------------------------------------------


def exchange(n: int, calls: int = 0) -> list[Message]:
    """A user message, then `calls` tool calls in one assistant message with their
    results, then a final answer."""
    out = [Message(role="user", content=f"request {n}")]
    if calls:
        ids = [f"call-{n}-{i}" for i in range(calls)]
        out.append(
            Message(
                role="assistant",
                content=f"working on {n}",
                tool_calls=[ToolCall(i, "read_file", json.dumps({"path": f"f{n}.py"})) for i in ids],
            )
        )
        out.extend(Message(role="tool", content=f"result {i}", tool_call_id=i, name="read_file") for i in ids)
    out.append(Message(role="assistant", content=f"answer {n}"))
    return out


def assert_groups_whole(plan: CompressionPlan) -> None:
    for part in (plan.head, plan.middle, plan.tail):
        assert repair_alternation(part) == part, "a tool call was separated from its results"
    assert not plan.tail or plan.tail[0].role != "tool"
    assert not plan.middle or plan.middle[0].role != "tool"


def test_plan_returns_none_when_short() -> None:
    history = exchange(0) + exchange(1)
    assert plan_compression(history, keep_first=2, keep_last=20) is None
    assert plan_compression([], keep_first=2, keep_last=20) is None


def test_plan_keeps_first_exchange_and_last_n() -> None:
    history = [m for n in range(20) for m in exchange(n)]  # 40 messages
    plan = plan_compression(history, keep_first=2, keep_last=10)
    assert plan is not None
    assert plan.head == history[:2]
    assert plan.tail == history[-10:]
    assert plan.head + plan.middle + plan.tail == history


def test_plan_does_not_split_tool_group_at_tail_boundary() -> None:
    history = [m for n in range(10) for m in exchange(n)] + exchange(10, calls=3) + exchange(11)
    # exchange(10, 3) = user, assistant(3 calls), tool, tool, tool, answer; exchange(11) = 2.
    # keep_last=4 puts the naive boundary on the second tool result.
    naive_start = len(history) - 4
    assert history[naive_start].role == "tool"
    plan = plan_compression(history, keep_first=2, keep_last=4)
    assert plan is not None
    assert_groups_whole(plan)
    assert plan.tail[0].tool_calls and len(plan.tail[0].tool_calls) == 3
    assert len(plan.tail) == 7
    assert plan.head + plan.middle + plan.tail == history


@pytest.mark.parametrize("keep_first", [2, 3, 4])
def test_plan_does_not_split_tool_group_at_head_boundary(keep_first: int) -> None:
    # The first answer is a 3-call group: a naive head of 2-4 messages would cut it.
    history = exchange(0, calls=3) + [m for n in range(1, 15) for m in exchange(n)]
    plan = plan_compression(history, keep_first=keep_first, keep_last=6)
    assert plan is not None
    assert_groups_whole(plan)
    assert [m.role for m in plan.head] == ["user", "assistant", "tool", "tool", "tool"]
    assert plan.head + plan.middle + plan.tail == history


def test_plan_with_groups_on_both_boundaries_and_apply_is_valid() -> None:
    history = (
        exchange(0, calls=3)
        + [m for n in range(1, 8) for m in exchange(n, calls=2)]
        + exchange(8, calls=3)
        + exchange(9)
    )
    plan = plan_compression(history, keep_first=3, keep_last=4)
    assert plan is not None
    assert_groups_whole(plan)
    result = apply_compression(plan, "## Goal\nFix the bugs.")
    assert repair_alternation(result) == result
    assert_valid_alternation(result)
    summaries = [m for m in result if m.text.startswith(SUMMARY_PREFIX)]
    assert len(summaries) == 1 and "Fix the bugs." in summaries[0].text
    assert result[: len(plan.head)] == plan.head
    assert result[-len(plan.tail) :] == plan.tail
    assert len(result) < len(history)


def assert_valid_alternation(messages: list[Message]) -> None:
    """Strict turn order: after a user turn (or tool results) comes an assistant."""
    previous = None
    for message in messages:
        if previous is not None:
            if message.role == "user":
                assert previous == "assistant", "two user turns in a row"
            if message.role == "assistant":
                assert previous in ("user", "tool"), "two assistant turns in a row"
        previous = message.role


@pytest.mark.parametrize("keep_last", [3, 4, 5, 6, 7, 8])
def test_apply_compression_valid_for_every_boundary(keep_last: int) -> None:
    history = exchange(0) + [m for n in range(1, 10) for m in exchange(n, calls=n % 4)]
    plan = plan_compression(history, keep_first=2, keep_last=keep_last)
    assert plan is not None
    assert_groups_whole(plan)
    result = apply_compression(plan, "summary text")
    assert repair_alternation(result) == result
    assert_valid_alternation(result)
    assert result[0] == history[0]


def test_second_compression_folds_the_first_summary_in() -> None:
    history = [m for n in range(20) for m in exchange(n)]
    first = apply_compression(plan_compression(history, keep_last=6), "Goal: fix parser. File src/p.py.")  # type: ignore[arg-type]
    grown = first + [m for n in range(20, 30) for m in exchange(n)]
    plan = plan_compression(grown, keep_last=6)
    assert plan is not None
    _system, messages = summary_request(plan.middle)
    assert "File src/p.py." in messages[0].text
    assert "previous-summary" in messages[0].text
    # Compressing a history whose middle is only the earlier summary changes nothing.
    assert plan_compression(first, keep_last=6) is None


def test_summary_request_structure_and_truncated_tool_results() -> None:
    middle = exchange(1, calls=1)
    middle[2] = Message(
        role="tool", content="START" + "z" * 50_000 + "FINAL ERROR", tool_call_id="call-1-0", name="read_file"
    )
    system, messages = summary_request(middle, previous_summary="Earlier: set up venv.")
    for section in ("Goal", "Decisions", "Files touched", "Commands run", "Open problems", "Next steps"):
        assert section in system
    assert len(messages) == 1 and messages[0].role == "user"
    text = messages[0].text
    assert "request 1" in text and "answer 1" in text and "read_file" in text and "f1.py" in text
    assert "START" in text and "FINAL ERROR" in text  # both ends of a long result survive
    assert text.count("z") < MAX_TOOL_RESULT_CHARS
    assert "Earlier: set up venv." in text


# --- turn preamble ---------------------------------------------------------------


def test_turn_preamble() -> None:
    assert turn_preamble([], None) is None
    assert turn_preamble([], "  ") is None
    text = turn_preamble(["src/a.py", "src/b.py", "src/a.py"], None)
    assert text is not None and text.count("src/a.py") == 1 and "src/b.py" in text
    many = [f"f{i}.py" for i in range(MAX_CHANGED_FILES + 7)]
    capped = turn_preamble(many, "user prefers pytest -x")
    assert capped is not None
    assert f"f{MAX_CHANGED_FILES - 1}.py" in capped and f"f{MAX_CHANGED_FILES}.py" not in capped
    assert "7 more" in capped and "user prefers pytest -x" in capped
