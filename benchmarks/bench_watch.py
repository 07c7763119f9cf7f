"""What an idle WorkspaceWatcher costs: one per open session, on a 5,000-file project.

Measures, in one process and one run: start-up time, resident memory added, CPU used
while nothing changes, kernel watches held (Linux), and the delay until a user's save
is noticed; and, for comparison, the kernel watches and set-up time of a plain
recursive watch of the same root (what `watchfiles.awatch(root)` would hold).

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

from watchfiles._rust_notify import RustNotify

from core.watch import WorkspaceWatcher

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


async def measure(root: Path, idle: float, sessions: int) -> bool:
    await asyncio.sleep(0.5)
    baseline_cpu = await idle_cpu(idle)
    baseline_rss = rss_bytes()
    baseline_watches = inotify_watches()

    started = time.perf_counter()
    watchers = [WorkspaceWatcher([root]) for _ in range(sessions)]
    for watcher in watchers:
        await watcher.start()
    start_seconds = (time.perf_counter() - started) / sessions
    assert all(w.watching for w in watchers), "a watcher failed to start"
    rss_added = (rss_bytes() - baseline_rss) / sessions
    watches = inotify_watches()
    watches_each = (
        None if watches is None or baseline_watches is None else (watches - baseline_watches) / sessions
    )

    await asyncio.sleep(0.5)  # let start-up work (the walk's garbage, first wakeups) pass
    watcher_cpu = await idle_cpu(idle)

    noticed = time.perf_counter()
    (root / "src" / "pkg0" / "mod0" / "file0.py").write_text("VALUE = 'edited'\n")
    while not all(w.pending for w in watchers) and time.perf_counter() - noticed < MAX_NOTICE_SECONDS:
        await asyncio.sleep(0.005)
    notice_seconds = time.perf_counter() - noticed
    changed = [w.drain() for w in watchers]
    for watcher in watchers:
        await watcher.aclose()

    started = time.perf_counter()
    recursive = RustNotify([str(root)], False, False, 300, True, False)
    recursive_seconds = time.perf_counter() - started
    recursive_watches = inotify_watches()
    recursive.close()

    per_watcher_cpu = (watcher_cpu - baseline_cpu) / sessions
    print(f"sessions: {sessions} watcher(s) on the same tree, idle {idle:.1f}s each phase")
    print(f"start      : {start_seconds * 1000:7.1f} ms per watcher (walk + kernel watches)")
    print(f"memory     : {rss_added / 1024:7.0f} KiB RSS added per watcher")
    print(
        f"idle CPU   : {per_watcher_cpu * 100:7.3f} % of a core per watcher "
        f"(process idle baseline {baseline_cpu * 100:.3f} %, with watchers {watcher_cpu * 100:.3f} %)"
    )
    if watches_each is not None and recursive_watches is not None and baseline_watches is not None:
        plain = recursive_watches - baseline_watches
        print(
            f"watches    : {watches_each:7.0f} per watcher | plain recursive watch {plain} "
            f"({plain / max(watches_each, 1):.1f}x), set up in {recursive_seconds * 1000:.1f} ms"
        )
    print(f"notice     : {notice_seconds * 1000:7.1f} ms from a save to every watcher holding it")
    print(f"reported   : {changed[0]}")

    ok = per_watcher_cpu <= MAX_IDLE_CPU and notice_seconds < MAX_NOTICE_SECONDS
    ok = ok and all(c == ["src/pkg0/mod0/file0.py"] for c in changed)
    return ok


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
