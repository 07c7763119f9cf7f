"""`hermes-acp run`: one prompt from a script or CI, over real processes and the scripted model."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_acp.terminal import exit_codes
from tests.support.acp_harness import run_hermes, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.schema import validate


def hermes_run(
    env: dict[str, str], cwd: Path, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return run_hermes(env, "run", *args, stdin=stdin, cwd=cwd)


def session_id_in(stderr: str) -> str:
    found = re.search(r"session ([0-9a-f]{32})", stderr)
    assert found, stderr
    return found.group(1)


def test_run_edits_a_file_in_accept_edits(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    (project / "notes.txt").write_text("alpha\nbeta\n")
    patch = ToolCallSpec("patch", {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}, id="p1")
    fake.script([Reply(tool_calls=[patch]), Reply(text="Replaced beta with gamma.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--mode", "accept_edits", "swap beta for gamma")
    assert result.returncode == exit_codes.OK, result.stderr
    assert result.stdout == "Replaced beta with gamma.\n"  # the answer, and only it
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"
    assert "✓ Edit notes.txt" in result.stderr
    assert "-beta" in result.stderr and "+gamma" in result.stderr  # the diff, as progress
    assert "rejected" not in result.stderr


def test_run_with_no_terminal_rejects_a_command_and_reports_it(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    marker = project / "ran.txt"
    command = ToolCallSpec("terminal", {"command": f"touch {marker}"}, id="t1")
    fake.script([Reply(tool_calls=[command]), Reply(text="I could not run it.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--mode", "accept_edits", "touch the file")
    assert result.returncode == exit_codes.NEEDS_APPROVAL, result.stderr
    assert not marker.exists()
    assert f"rejected (no terminal to ask): Run: touch {marker}" in result.stderr
    assert "--mode" in result.stderr  # says how to allow it
    tool_message = next(m for m in fake.requests[-1].body["messages"] if m["role"] == "tool")
    assert "rejected" in tool_message["content"]


def test_json_writes_every_update_as_a_schema_valid_line(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    write = ToolCallSpec("write_file", {"path": "new.txt", "content": "hello\n"}, id="w1")
    fake.script([Reply(tool_calls=[write]), Reply(text="Wrote new.txt.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--json", "--mode", "accept_edits", "write it")
    assert result.returncode == exit_codes.OK, result.stderr
    lines = result.stdout.splitlines()
    updates = [json.loads(line) for line in lines]
    for update in updates:
        validate("SessionNotification", update)
    kinds = [u["update"]["sessionUpdate"] for u in updates]
    assert "tool_call" in kinds and "tool_call_update" in kinds
    answer = "".join(
        u["update"]["content"]["text"]
        for u in updates
        if u["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert answer == "Wrote new.txt."
    assert (project / "new.txt").read_text() == "hello\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_ctrl_c_mid_turn_cancels_keeps_the_session_and_a_second_run_resumes_it(
    fake: FakeProvider, tmp_path: Path, project: Path, signum: int
) -> None:
    """Ctrl-C (or a CI job's timeout, SIGTERM) cancels the turn; the session is kept."""
    env = server_env(tmp_path, fake)
    fake.script([Reply(text="word " * 400, chunk_size=5, chunk_delay=0.02), Reply(text="Resumed.")])
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hermes_acp",
        "run",
        "tell me a long story",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=project,
    )
    assert process.stdout is not None and process.stderr is not None
    first = await asyncio.wait_for(process.stdout.read(5), 30)  # the answer is streaming
    assert first
    process.send_signal(signum)
    rest, stderr = await asyncio.wait_for(asyncio.gather(process.stdout.read(), process.stderr.read()), 30)
    assert await process.wait() == exit_codes.CANCELLED
    assert len(first + rest) < len("word " * 400)  # cut short
    assert b"cancelling the turn" in stderr
    session_id = session_id_in(stderr.decode())
    again = hermes_run(env, project, "--session", session_id, "go on")
    assert again.returncode == exit_codes.OK, again.stderr
    assert again.stdout == "Resumed.\n"
    sent = json.dumps(fake.requests[-1].body["messages"])
    assert "tell me a long story" in sent and "go on" in sent


@pytest.mark.parametrize(
    ("replies", "extra_env", "code"),
    [
        ([Reply(text="I will not.", finish_reason="refusal")], {}, exit_codes.REFUSED),
        ([Reply(text="", finish_reason="length")], {}, exit_codes.LIMIT),
        (
            [Reply(tool_calls=[ToolCallSpec("list_files", {"path": "."}, id="l1")]), Reply(text="never")],
            {"HERMES_ACP_MAX_ITERATIONS": "1"},
            exit_codes.LIMIT,
        ),
        ([Reply.server_error()], {"HERMES_ACP_MAX_RETRIES": "0"}, exit_codes.ERROR),
        ([Reply.unauthorized()], {"HERMES_ACP_MAX_RETRIES": "0"}, exit_codes.CONFIG),
    ],
    ids=["refusal", "max_tokens", "max_turn_requests", "provider_error", "key_rejected"],
)
def test_how_the_turn_ended_is_the_exit_code(
    fake: FakeProvider,
    tmp_path: Path,
    project: Path,
    replies: list[Reply],
    extra_env: dict[str, str],
    code: int,
) -> None:
    fake.script(replies)
    result = hermes_run(server_env(tmp_path, fake, **extra_env), project, "hello")
    assert result.returncode == code, result.stderr


def test_a_provider_error_is_said_once_in_words_with_no_log_line(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    fake.script([Reply.server_error(), Reply.server_error()])
    result = hermes_run(server_env(tmp_path, fake, HERMES_ACP_MAX_RETRIES="1"), project, "hello")
    assert result.returncode == exit_codes.ERROR, result.stderr
    assert result.stdout == ""  # not an answer
    assert result.stderr.count("The server had an error") == 1, result.stderr
    assert "error: the model provider failed: HTTP 500: The server had an error." in result.stderr
    assert not re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", result.stderr, re.MULTILINE)  # no log line


def test_no_api_key_is_a_config_error(tmp_path: Path, project: Path) -> None:
    result = hermes_run(server_env(tmp_path), project, "hello")
    assert result.returncode == exit_codes.CONFIG
    assert "hermes-acp setup" in result.stderr


def test_model_picks_the_model_of_a_new_session(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    fake.script([Reply(text="From the small one.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--model", "gpt-4.1-mini", "hello")
    assert result.returncode == exit_codes.OK, result.stderr
    assert fake.requests[-1].body["model"] == "gpt-4.1-mini"


def test_an_effort_the_model_does_not_take_is_a_usage_error(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    before = len(fake.requests)
    result = hermes_run(server_env(tmp_path, fake), project, "--effort", "high", "hello")  # gpt-4.1
    assert result.returncode == exit_codes.USAGE, result.stderr
    assert "--effort high: the model gpt-4.1 takes no reasoning effort" in result.stderr
    assert "configId" not in result.stderr  # the command line's words, not the protocol's
    assert not [r for r in fake.requests[before:] if r.path.endswith("/chat/completions")]


def test_effort_is_sent_for_a_model_that_takes_it(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    fake.script([Reply(text="Thought hard.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--model", "o3", "--effort", "high", "hello")
    assert result.returncode == exit_codes.OK, result.stderr
    body = fake.requests[-1].body
    assert (body["model"], body["reasoning_effort"]) == ("o3", "high")


def test_the_prompt_from_stdin_with_an_attached_file(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    (project / "notes.txt").write_text("the secret word is heliotrope\n")
    fake.script([Reply(text="Heliotrope.")])
    result = hermes_run(server_env(tmp_path, fake), project, "-", stdin="what is in @notes.txt?")
    assert result.returncode == exit_codes.OK, result.stderr
    sent = json.dumps(fake.requests[-1].body["messages"])
    assert "what is in @notes.txt?" in sent
    assert "the secret word is heliotrope" in sent  # embedded, as an editor's @-mention


def test_a_missing_attachment_is_a_usage_error_before_anything_runs(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    before = len(fake.requests)
    result = hermes_run(server_env(tmp_path, fake), project, "read @missing.txt")
    assert result.returncode == exit_codes.USAGE
    assert "missing.txt: no such file" in result.stderr
    assert len(fake.requests) == before


def test_a_child_server_gives_the_same_run(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    fake.script([Reply(text="From the child.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--server", "child", "hello")
    assert result.returncode == exit_codes.OK, result.stderr
    assert result.stdout == "From the child.\n"


def test_the_stdio_server_does_not_import_the_terminal_libraries() -> None:
    probe = (
        "import sys; from hermes_acp import cli\n"
        "cli.run_stdio = lambda *args, **kwargs: 0  # all up to serving, as `hermes-acp --stdio` does\n"
        "cli.main(['--stdio'])\n"
        "import hermes_acp.server, hermes_acp.transport\n"
        "print(sorted(m for m in ('rich', 'prompt_toolkit', 'hermes_acp.terminal') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_a_broken_config_is_a_config_error(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    env = server_env(tmp_path, fake)
    Path(env["HERMES_ACP_HOME"]).mkdir(parents=True)
    (Path(env["HERMES_ACP_HOME"]) / "config.toml").write_text('modle = "typo"\n')
    result = hermes_run(env, project, "hello")
    assert result.returncode == exit_codes.CONFIG
    assert "modle" in result.stderr


def test_command_output_and_its_exit_code_show_as_progress(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    command = ToolCallSpec("terminal", {"command": "echo first-line; echo second-line; exit 3"}, id="t1")
    fake.script([Reply(tool_calls=[command]), Reply(text="It failed.")])
    result = hermes_run(server_env(tmp_path, fake), project, "--mode", "yolo", "run it")
    assert result.returncode == exit_codes.OK, result.stderr
    assert result.stdout == "It failed.\n"
    progress = result.stderr.splitlines()
    start = progress.index("→ Run: echo first-line; echo second-line; exit 3")
    assert progress[start + 1 : start + 5] == [
        "  first-line",
        "  second-line",
        "✗ Run: echo first-line; echo second-line; exit 3 (failed)",
        "  exit code 3",
    ]
