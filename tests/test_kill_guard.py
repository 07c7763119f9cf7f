"""The guard that keeps a test from signalling every process, and the fact behind it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.support.kill_guard import BroadcastKill


@pytest.mark.parametrize("group", [0, 1])
def test_a_test_cannot_signal_group_0_or_1(group: int) -> None:
    with pytest.raises(BroadcastKill, match="not a host pid"):
        os.killpg(group, signal.SIGKILL)


@pytest.mark.parametrize("pid", [0, -1])
def test_a_test_cannot_signal_its_group_or_everyone(pid: int) -> None:
    with pytest.raises(BroadcastKill, match="use a host pid"):
        os.kill(pid, signal.SIGKILL)


def test_a_real_process_group_is_still_signalled() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
