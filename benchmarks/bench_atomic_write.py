"""What the two fsyncs of the one atomic write cost: `write_file` and `patch` replace a file
through `WorkspaceScope.write_bytes` (`hermes_core.fence.beneath.replace_in`), which syncs
the new file before its rename and the directory after it, so a crash leaves the old
content or the new, never an empty file.

Each round writes the same file three ways, in a shuffled order: as the agent does (both
syncs), with the file's sync only, and with no sync (`os.fsync` made a no-op for the
write); the same code path otherwise. The figures are the medians and p90s of each way and
the ratios to the write without syncs, all from the same run. The project lives in a
temporary folder on the file system of `--dir` (by default the system's temporary
folder): fsync costs what that disk makes it cost, nothing on a tmpfs.

    python -m benchmarks.bench_atomic_write [--rounds N] [--size BYTES] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import stat
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_core.fence.scope import WorkspaceScope  # noqa: E402

_real_fsync = os.fsync


def _file_only(fd: int) -> None:
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        _real_fsync(fd)


def _no_sync(fd: int) -> None:
    return None


# How each way syncs: None is the agent's own write, untouched.
WAYS: dict[str, Callable[[int], None] | None] = {
    "both syncs (as the agent writes)": None,
    "the file's sync only": _file_only,
    "no sync": _no_sync,
}


def timed_write(scope: WorkspaceScope, data: bytes, fsync: Callable[[int], None] | None) -> float:
    if fsync is None:
        start = time.perf_counter()
        scope.write_bytes("src/module.py", data)
        return time.perf_counter() - start
    with mock.patch.object(os, "fsync", fsync):
        start = time.perf_counter()
        scope.write_bytes("src/module.py", data)
        return time.perf_counter() - start


def main(rounds: int, size: int, where: str | None) -> int:
    load = os.getloadavg()
    data = (b"print('a line of code, as a model writes it')\n" * (size // 46 + 1))[:size]
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        project = Path(tmp) / "project"
        (project / "src").mkdir(parents=True)
        scope = WorkspaceScope(project)
        for fsync in WAYS.values():  # warm-up: the directory opened, the name cached
            timed_write(scope, data, fsync)
        order = list(WAYS)
        for _ in range(rounds):
            random.shuffle(order)
            for way in order:
                times[way].append(timed_write(scope, data, WAYS[way]))
        assert (project / "src" / "module.py").read_bytes() == data
    after = os.getloadavg()
    print(f"load average {load[0]:.1f} -> {after[0]:.1f} ({os.cpu_count()} cores)")
    print(f"{rounds} rounds of a {size}-byte write_file")
    bare = statistics.median(times["no sync"])
    for way, samples in times.items():
        median, p90 = statistics.median(samples), statistics.quantiles(samples, n=10)[-1]
        ratio = median / bare
        print(f"{way:34} median {median * 1e3:7.3f} ms  p90 {p90 * 1e3:7.3f} ms  {ratio:5.1f}x no sync")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--size", type=int, default=4096, help="bytes a write (default: a 4 KiB source file)")
    parser.add_argument("--dir", default=None, help="where the project is made: its disk is measured")
    args = parser.parse_args()
    sys.exit(main(args.rounds, args.size, args.dir))
