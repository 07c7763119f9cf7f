"""`hermes-acp chat` in a pseudo-terminal, as a person runs it: one spawner for the pty tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect

from tests.support.acp_harness import server_env
from tests.support.fake_provider import FakeProvider


def chat_env(tmp_path: Path, fake: FakeProvider, columns: int) -> dict[str, str]:
    return {**server_env(tmp_path, fake), "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "40"}


@contextmanager
def chat_in_pty(
    env: dict[str, str], cwd: Path, *options: str, columns: int = 120, timeout: float = 30
) -> Iterator[pexpect.spawn]:
    """The chat started in `cwd`, up to its prompt; closed (and reaped) on the way out, so
    `exitstatus` is set after the block."""
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "hermes_acp", "chat", *options],
        env=env,
        cwd=str(cwd),
        timeout=timeout,
        encoding="utf-8",
        dimensions=(40, columns),
    )
    try:
        chat.expect_exact("Ctrl-D quits")
        yield chat
    finally:
        chat.close()
