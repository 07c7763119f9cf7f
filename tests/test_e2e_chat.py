"""`hermes-acp chat` driven in a pseudo-terminal, as a person would: completion of slash
commands, a streamed answer, an inline approval, /sessions to reopen a past session,
history kept, Ctrl-D to leave."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pexpect

from tests.support.acp_harness import server_env
from tests.support.chat_pty import chat_env, chat_in_pty
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec


def test_chat_in_a_pseudo_terminal(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    env = chat_env(tmp_path, fake, columns=120)
    fake.script([Reply(text="An earlier answer.")])
    earlier = subprocess.run(
        [sys.executable, "-m", "hermes_acp", "run", "an earlier question"],
        capture_output=True, text=True, env=env, cwd=project, timeout=60,
    )  # fmt: skip
    assert earlier.returncode == 0, earlier.stderr
    (project / "notes.txt").write_text("alpha\n")
    marker = project / "ran.txt"
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCallSpec("patch", {"path": "notes.txt", "old_text": "alpha", "new_text": "omega"})
                ]
            ),
            Reply(tool_calls=[ToolCallSpec("terminal", {"command": f"touch {marker}"})]),
            Reply(text="Both done, as asked.", chunk_size=4),
        ]
    )
    with chat_in_pty(env, project, "--mode", "accept_edits") as chat:
        chat.send("/ses")
        chat.send("\t")  # completion from the chat's own and the server's commands
        chat.expect_exact("/sessions")
        chat.sendcontrol("u")
        chat.send("/comp")
        chat.expect_exact("Summarise the conversation")  # the server's /compact, with its description
        chat.sendcontrol("u")
        chat.sendline("please edit @notes.txt and touch")
        chat.expect_exact("Edit notes.txt")
        chat.expect_exact(f"touch {marker}")  # the card shows the command first
        chat.expect(r"Choose 1-\d")
        chat.sendline("1")
        chat.expect_exact("Both done, as asked.")
        assert (project / "notes.txt").read_text() == "omega\n"
        # @notes.txt went along, embedded with its text (the patch's arguments hold no newline)
        assert any("alpha\\n" in json.dumps(r.body) for r in fake.requests)
        assert marker.exists()
        chat.sendline("/sessions")
        chat.expect_exact("an earlier question")
        chat.expect(r"Open which")
        chat.sendline("1")
        chat.expect_exact("An earlier answer.")  # replayed on load
        chat.expect_exact("Now in session")
        chat.expect_exact("›")  # the prompt is up again
        chat.sendcontrol("d")
        chat.expect(pexpect.EOF)
    assert chat.exitstatus == 0
    history = (Path(env["HERMES_ACP_HOME"]) / "chat_history").read_text()
    assert re.search(r"please edit @notes.txt and touch", history)


def test_chat_without_a_terminal_points_to_run(tmp_path: Path, project: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hermes_acp", "chat"],
        input="hello\n", capture_output=True, text=True, env=server_env(tmp_path), cwd=project, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "hermes-acp run" in result.stderr


def test_chat_shows_thinking_dimmed_and_renders_the_markdown(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    env = chat_env(tmp_path, fake, columns=100)
    answer = "Use **bold** here.\n\n1. first\n2. second\n\n```python\nprint('x')\n```\n\nAll done."
    fake.script([Reply(reasoning="Weighing the options.", text=answer, chunk_size=5)])
    with chat_in_pty(env, project, columns=100) as chat:
        chat.sendline("hello")
        chat.expect_exact("All done.")
        shown = chat.before
        chat.expect_exact("›")
        chat.sendcontrol("d")
        chat.expect(pexpect.EOF)
    # The thinking, dimmed (SGR 2), streamed chunk by chunk.
    thought = re.sub(r"\x1b\[0m\x1b\[2;3m", "", shown)
    assert "\x1b[2;3mWeighing the options." in thought, shown
    # The answer as Markdown: bold in bold (SGR 1), the list numbered, no markup left.
    assert "\x1b[1mbold\x1b[0m" in shown and "**" not in shown
    assert re.search(r" 1 \x1b\[0mfirst", shown) and "```" not in shown
    assert "print" in shown
