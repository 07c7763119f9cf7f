"""Background commands (`terminal background=true`): noticing when one ends.

Each adopted command gets a watcher task that waits for its exit, then (unless the model
killed it itself) records a `JobEnded`: the model's next call carries one line about it
(`ModelTurn._take_steer`), and the embedder's `on_end` updates the card of the call that
started it. `/jobs` lists what is running (`running_jobs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.workspace import RunningCommand

log = logging.getLogger(__name__)

TAIL_CHARS = 2_000  # of the output, on the card
LINE_TAIL_CHARS = 200  # of the output, in the model's one line
# Background commands running at once. Each sandboxed one may hold the sandbox's whole
# process cap (`sandbox_max_processes`), so without a count a model multiplies that cap by
# starting more: 8 a reply, reply after reply, in every session of the server.
MAX_RUNNING = 16  # in one session
MAX_RUNNING_ALL = 64  # in every session of this process together
_placed = 0  # this process's background commands: starting or running


@dataclass(frozen=True, slots=True)
class JobEnded:
    handle: str
    command: str
    call_id: str  # the terminal call that started it
    exit_code: int | None
    signal: str | None
    tail: str  # the end of its output

    @property
    def status(self) -> str:
        return f"killed by {self.signal}" if self.signal else f"exit code {self.exit_code}"

    def line(self) -> str:
        last = self.tail.strip().splitlines()[-1][-LINE_TAIL_CHARS:] if self.tail.strip() else "no output"
        return f"[Background job {self.handle} (`{self.command}`) ended: {self.status}; last output: {last}]"


@dataclass(slots=True)
class Job:
    handle: str
    command: str
    call_id: str
    started: float = field(default_factory=time.monotonic)
    watcher: asyncio.Task[None] | None = None
    quiet: bool = False  # the model is ending it itself: its end is no news


@dataclass(slots=True)
class Jobs:
    """A session's background commands, and the ends the model has not been told of yet."""

    running: dict[str, Job] = field(default_factory=dict)
    unreported: list[JobEnded] = field(default_factory=list)
    on_end: Callable[[JobEnded], None] | None = None  # the embedder's: update the call's card
    starting: int = 0  # places taken for commands not yet adopted

    def take_place(self) -> str | None:
        """Take a place for one more background command: None, or why there is none (the
        caller then starts nothing). Give it back with `give_back` unless it is `watch`ed."""
        global _placed
        if len(self.running) + self.starting >= MAX_RUNNING:
            return f"{MAX_RUNNING} background commands of this session are already running"
        if _placed >= MAX_RUNNING_ALL:
            return f"{MAX_RUNNING_ALL} background commands of this agent's sessions are already running"
        self.starting += 1
        _placed += 1
        return None

    def give_back(self) -> None:
        """The place `take_place` gave, for a command that did not start."""
        global _placed
        self.starting -= 1
        _placed -= 1

    def report_ends_to(self, on_end: Callable[[JobEnded], None]) -> None:
        """Have the embedder hear of each job's end, as it happens (it updates the call's card)."""
        self.on_end = on_end

    def watch(self, handle: str, command: str, call_id: str, run: RunningCommand, processes: dict) -> None:
        job = Job(handle, command, call_id)
        self.running[handle] = job
        self.starting -= 1  # its place is the watcher's now, given back when it ends
        job.watcher = asyncio.create_task(self._wait(job, run, processes), name=f"job {handle}")
        job.watcher.add_done_callback(_free_place)  # ended, or cancelled even before it began

    async def _wait(self, job: Job, run: RunningCommand, processes: dict) -> None:
        try:
            status = await run.wait()
            output, _ = await run.output()
        except Exception:  # the command's end could not be read: nothing to report
            log.debug("background job %s: its end could not be read", job.handle, exc_info=True)
            self.running.pop(job.handle, None)
            return
        self.running.pop(job.handle, None)
        if job.quiet or job.handle not in processes:
            return  # the model killed it with the process tool: it knows
        ended = JobEnded(
            job.handle, job.command, job.call_id, status.exit_code, status.signal, output[-TAIL_CHARS:]
        )
        self.unreported.append(ended)
        if self.on_end is not None:
            try:
                self.on_end(ended)
            except Exception:
                log.exception("reporting the end of background job %s failed", job.handle)

    def forget(self, handle: str) -> None:
        """The model is killing this job: its end will not be reported."""
        job = self.running.pop(handle, None)
        if job is not None:
            job.quiet = True

    def take_lines(self) -> list[str]:
        ended, self.unreported = self.unreported, []
        return [e.line() for e in ended]

    async def aclose(self) -> None:
        for job in list(self.running.values()):
            if job.watcher is not None:
                job.watcher.cancel()
                with contextlib.suppress(BaseException):
                    await job.watcher
        self.running.clear()


def _free_place(_: asyncio.Task[None]) -> None:
    global _placed
    _placed -= 1


def running_jobs_text(jobs: Jobs) -> str:
    if not jobs.running:
        return "No background jobs are running."
    now = time.monotonic()
    lines = [f"{len(jobs.running)} background job{'s' if len(jobs.running) != 1 else ''} running:"]
    for job in jobs.running.values():
        lines.append(f"- `{job.handle}`: `{job.command}` (for {now - job.started:.0f} s)")
    return "\n".join(lines)
