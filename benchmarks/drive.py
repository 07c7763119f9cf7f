"""Driving the real server from a benchmark: sending a prompt, recording a profile."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

from tests.support.acp_harness import ServerProcess

# The server's settings for each wire API the benchmarks run a session on: the models the
# README's figures were measured with (the tests' table, tests/support/acp_harness.py, has
# reasoning models where a test needs them).
API_SETTINGS: dict[str, dict[str, str]] = {
    "chat_completions": {"HERMES_ACP_PROVIDER": "openai", "HERMES_ACP_MODEL": "gpt-4.1"},
    "responses": {
        "HERMES_ACP_PROVIDER": "openai",
        "HERMES_ACP_MODEL": "gpt-4.1",
        "HERMES_ACP_API_MODE": "responses",
    },
    "anthropic_messages": {"HERMES_ACP_PROVIDER": "anthropic", "HERMES_ACP_MODEL": "claude-sonnet-4-5"},
}


async def send_prompt(server: ServerProcess, request_id: int, session: str, text: str) -> None:
    await server.send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]},
        }
    )


async def start_profiler(pid: int, profile: Path | None, rate: int) -> asyncio.subprocess.Process | None:
    """py-spy recording `pid` into `profile` (speedscope), when asked for and installed."""
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if profile is None or spy is None:
        return None
    return await asyncio.create_subprocess_exec(
        spy, "record", "--pid", str(pid), "--format", "speedscope", "--output", str(profile),
        "--rate", str(rate), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def stop_profiler(recorder: asyncio.subprocess.Process | None) -> None:
    if recorder is not None:
        recorder.send_signal(2)  # SIGINT: py-spy writes its file and exits
        await recorder.wait()
