"""Waiting on a condition in a test: poll until it holds, with a cap that only catches a hang.

A loaded 2-core CI machine makes every step slow, so a test never sleeps a fixed time
hoping something happened, and never bounds how long something took: it waits for the
thing itself, and the cap is long enough that reaching it means it will never happen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HANG = 30.0  # seconds: far beyond any step on a loaded machine, short of pytest's own timeout


async def until(condition: Callable[[], T], what: str = "the condition", within: float = HANG) -> T:
    """The first truthy value of `condition()`, polled every 10 ms."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {within:.0f} s for {what}")
        await asyncio.sleep(0.01)
