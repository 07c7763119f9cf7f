"""`StallWatch` calls an rg stalled only when a thread of it waits to open a FIFO: a
process asleep for another reason (a timer here; a slow disk or a busy rg alike) is not."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.fence.rg_stall import StallWatch, _sample, blocked_path
from hermes_core.fence.ripgrep import find_rg
from tests.support.waiting import until


@pytest.fixture
def blocked_rg(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "kept.txt").write_text("x\n")
    os.mkfifo(tmp_path / "sub" / ".ignore")
    rg = subprocess.Popen([find_rg(), "--no-config", "--files", "."], cwd=tmp_path, stdout=subprocess.DEVNULL)
    yield rg
    rg.kill()
    rg.wait()


def waits_on_a_fifo(pid: int) -> bool:
    sample = _sample(pid)
    return sample is not None and bool(sample.at_fifo)


async def test_an_rg_waiting_to_open_a_fifo_is_stalled_and_the_fifo_named(
    blocked_rg: subprocess.Popen[bytes],
) -> None:
    await until(lambda: waits_on_a_fifo(blocked_rg.pid), "rg to wait on the FIFO")
    watch = StallWatch(blocked_rg.pid, seconds=0.0)
    assert not watch.stalled(0)  # the first look only starts the clock
    assert watch.stalled(0)
    assert blocked_path(blocked_rg.pid) == "./sub/.ignore"


async def test_output_since_the_last_look_is_progress(blocked_rg: subprocess.Popen[bytes]) -> None:
    await until(lambda: waits_on_a_fifo(blocked_rg.pid), "rg to wait on the FIFO")
    watch = StallWatch(blocked_rg.pid, seconds=0.0)
    assert not watch.stalled(0)
    assert not watch.stalled(10)


async def test_a_process_asleep_for_another_reason_is_not_stalled() -> None:
    sleeper = await asyncio.create_subprocess_exec("sleep", "600")
    try:
        await until(lambda: (s := _sample(sleeper.pid)) is not None and s.asleep, "sleep to sleep")
        watch = StallWatch(sleeper.pid, seconds=0.0)
        assert not any(watch.stalled(0) for _ in range(3))
    finally:
        sleeper.kill()
        await sleeper.wait()
