"""What a WorkspaceWatcher costs next to a plain `watchfiles.awatch(root)` on the same
5,000-file project (plus 5,000 files under node_modules), one after the other in one run.

Per watcher: start-up time, resident memory added, CPU used while nothing changes,
kernel watches held (Linux), the delay until a user's save is noticed, and what each
reports after the save plus churn nobody should hear about (a gitignored build output,
a dependency's file); each as a ratio ours/awatch.

Run: python -m benchmarks.bench_watch [--files N] [--deps N] [--idle SECONDS] [--sessions N]
Exits non-zero only when a sanity bound breaks (idle CPU above 5% of a core, a save
not noticed within 2 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import watchfiles

from hermes_core.changes.watch import WorkspaceWatcher

MAX_IDLE_CPU = 0.05  # fraction of one core
MAX_NOTICE_SECONDS = 2.0


def build_tree(root: Path, files: int, deps: int) -> tuple[int, int]:
    """A git project: `files` sources in nested packages, `deps` files under node_modules.
    Returns (source directories, all directories)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("node_modules/\ncoverage/\n")
    source_dirs: set[Path] = set()
    for n in range(files):
        folder = root / "src" / f"pkg{n % 25}" / f"mod{(n // 25) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        source_dirs.add(folder)
        (folder / f"file{n}.py").write_text(f"VALUE = {n}\n")
    for n in range(deps):
        folder = root / "node_modules" / f"dep{n % 400}" / f"lib{(n // 400) % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"index{n}.js").write_text("module.exports = 1;\n")
    all_dirs = sum(1 for _ in os.walk(root))
    return len(source_dirs), all_dirs


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the peak is the best we have
        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def inotify_watches() -> int | None:
    """Kernel watches this process holds (Linux), from /proc/self/fdinfo."""
    try:
        names = os.listdir("/proc/self/fdinfo")
    except OSError:
        return None
    count = 0
    for name in names:
        try:
            with open(f"/proc/self/fdinfo/{name}") as handle:
                count += sum(1 for line in handle if line.startswith("inotify wd:"))
        except OSError:
            continue
    return count


async def idle_cpu(seconds: float, slices: int = 3) -> float:
    """CPU seconds (all threads) per wall second while the loop just sleeps; the median
    of a few slices, so one burst of unrelated work does not decide it."""
    rates = []
    for _ in range(slices):
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds / slices)
        rates.append((time.process_time() - cpu) / (time.perf_counter() - wall))
    return sorted(rates)[len(rates) // 2]


class Sample:
    """One contender's figures, per watcher."""

    def __init__(self) -> None:
        self.start_seconds = 0.0
        self.rss_added = 0.0
        self.idle_cpu = 0.0
        self.watches: float | None = None
        self.notice_seconds = 0.0
        self.reported: list[str] = []


async def measure_ours(root: Path, idle: float, sessions: int, baseline_cpu: float) -> Sample:
    sample = Sample()
    baseline_rss, baseline_watches = rss_bytes(), inotify_watches()
    started = time.perf_counter()
    watchers = [WorkspaceWatcher([root]) for _ in range(sessions)]
    for watcher in watchers:
        await watcher.start()
    sample.start_seconds = (time.perf_counter() - started) / sessions
    assert all(w.watching for w in watchers), "a watcher failed to start"
    sample.rss_added = (rss_bytes() - baseline_rss) / sessions
    sample.watches = per_watcher(inotify_watches(), baseline_watches, sessions)
    await asyncio.sleep(0.5)  # let start-up work (the walk's garbage, first wakeups) pass
    sample.idle_cpu = (await idle_cpu(idle) - baseline_cpu) / sessions
    noticed = time.perf_counter()
    make_changes(root, "ours")
    while not all(w.pending >= 1 for w in watchers) and time.perf_counter() - noticed < MAX_NOTICE_SECONDS:
        await asyncio.sleep(0.005)
    sample.notice_seconds = time.perf_counter() - noticed
    await asyncio.sleep(0.3)  # the gitignored and node_modules writes had their chance too
    sample.reported = watchers[0].drain()
    for watcher in watchers:
        await watcher.aclose()
    return sample


async def measure_awatch(root: Path, idle: float, sessions: int, baseline_cpu: float) -> Sample:
    """The reference: `watchfiles.awatch(root)` as documented (default filter, one
    recursive watch), consumed by a task per session."""
    sample = Sample()
    baseline_rss, baseline_watches = rss_bytes(), inotify_watches()
    stop = asyncio.Event()
    seen: list[set[str]] = [set() for _ in range(sessions)]

    async def consume(index: int) -> None:
        async for changes in watchfiles.awatch(root, stop_event=stop):
            seen[index].update(os.path.relpath(path, root) for _, path in changes)

    started = time.perf_counter()
    tasks = [asyncio.create_task(consume(n)) for n in range(sessions)]
    # awatch gives no "ready" signal: it is ready once its kernel watches stop growing.
    ready_watches = -1
    while True:
        await asyncio.sleep(0.02)
        current = inotify_watches()
        if current is None or current == ready_watches:
            break
        ready_watches = current
    sample.start_seconds = (time.perf_counter() - started - 0.02) / sessions
    sample.rss_added = (rss_bytes() - baseline_rss) / sessions
    sample.watches = per_watcher(inotify_watches(), baseline_watches, sessions)
    await asyncio.sleep(0.5)
    sample.idle_cpu = (await idle_cpu(idle) - baseline_cpu) / sessions
    noticed = time.perf_counter()
    make_changes(root, "awatch")
    while not all(seen) and time.perf_counter() - noticed < MAX_NOTICE_SECONDS:
        await asyncio.sleep(0.005)
    sample.notice_seconds = time.perf_counter() - noticed
    await asyncio.sleep(0.3)
    sample.reported = sorted(seen[0])
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return sample


def make_changes(root: Path, tag: str) -> None:
    """A user's save, then churn nobody should be told about: a gitignored build output
    and a dependency's file."""
    (root / "src" / "pkg0" / "mod0" / "file0.py").write_text(f"VALUE = {tag!r}\n")
    (root / "coverage").mkdir(exist_ok=True)
    (root / "coverage" / f"{tag}.json").write_text("{}\n")
    (root / "node_modules" / "dep0" / "lib0" / "index0.js").write_text(f"// {tag}\n")


def per_watcher(now: int | None, before: int | None, sessions: int) -> float | None:
    return None if now is None or before is None else (now - before) / sessions


def ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None:
        return "   n/a"
    if theirs <= 0:
        return "   inf" if ours > 0 else "  1.00"
    return f"{ours / theirs:6.2f}"


async def measure(root: Path, idle: float, sessions: int) -> bool:
    await asyncio.sleep(0.5)
    baseline_cpu = await idle_cpu(idle)
    ours = await measure_ours(root, idle, sessions, baseline_cpu)
    theirs = await measure_awatch(root, idle, sessions, baseline_cpu)

    def row(name: str, unit: str, scale: float, a: float | None, b: float | None) -> None:
        shown_a = "n/a" if a is None else f"{a * scale:9.1f}"
        shown_b = "n/a" if b is None else f"{b * scale:9.1f}"
        print(f"{name:<12}{shown_a:>10} {unit:<6}{shown_b:>10} {unit:<6}  ours/awatch {ratio(a, b)}")

    print(
        f"{sessions} watcher(s) on the same tree, idle {idle:.1f}s per phase (process idle "
        f"{baseline_cpu * 100:.3f} % of a core)"
    )
    print(f"{'':<12}{'ours':>10} {'':<6}{'awatch':>10}")
    row("start", "ms", 1000, ours.start_seconds, theirs.start_seconds)
    row("memory", "KiB", 1 / 1024, ours.rss_added, theirs.rss_added)
    row("idle CPU", "%core", 100, ours.idle_cpu, theirs.idle_cpu)
    row("watches", "", 1, ours.watches, theirs.watches)
    row("notice", "ms", 1000, ours.notice_seconds, theirs.notice_seconds)
    print(f"reported   : ours {ours.reported}")
    print(f"             awatch {theirs.reported}")

    ok = ours.idle_cpu <= MAX_IDLE_CPU and ours.notice_seconds < MAX_NOTICE_SECONDS
    return ok and ours.reported == ["src/pkg0/mod0/file0.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5_000, help="source files")
    parser.add_argument("--deps", type=int, default=5_000, help="files under node_modules")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds per idle measurement")
    parser.add_argument("--sessions", type=int, default=1, help="watchers on the same tree")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-watch-") as temp:
        root = Path(temp).resolve()
        started = time.perf_counter()
        source_dirs, all_dirs = build_tree(root, options.files, options.deps)
        built = time.perf_counter() - started
        print(
            f"tree: {options.files} source files in {source_dirs} directories, {options.deps} files "
            f"under node_modules; {all_dirs} directories in all (built in {built:.1f}s)"
        )
        ok = asyncio.run(measure(root, options.idle, options.sessions))
    print("PASS" if ok else "FAIL: a sanity bound broke (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
