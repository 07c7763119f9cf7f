"""The cost of the after-command check (`hermes_core.sandbox.planted`) per sandboxed command,
against the Python side of a launch (`Sandbox.wrap`) in the same run.

A workspace like a monorepo: a root repository with `FOLDERS` folders on three levels,
`NESTED` repositories below it (vendored clones with a remote and the sample hooks git
writes), and none of the run-later names (all looked for). Each round, shuffled: one
`Sandbox.wrap` for a utility command (its mounts, cache needs and environment) and one
`planted.watch` plus `planted.undo` (what a launch and its end add), and, for reference,
the two bounded walks the check made before round 12 (`repo_finder.bounded_walk`, three
levels, dependency folders skipped): the check now finds repositories at any depth from the
kernel's watches, after one walk per root (timed apart: "first check"). `--dependencies N`
adds a `node_modules` of about N folders, which the check now covers. The figures are the
medians and p90s in microseconds and the ratio of the medians. No bwrap is started: the
launch itself (~10-20 ms, `bench_sandbox`) dwarfs both. The load average is printed.

Run: python -m benchmarks.bench_planted [--rounds N] [--nested N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from hermes_core.fence.scope import WorkspaceScope
from hermes_core.sandbox import planted, repo_finder
from hermes_core.sandbox.bwrap import Sandbox

FOLDERS = (8, 6, 4)  # per level: 8 + 48 + 192 folders


def dependencies(project: Path, count: int) -> None:
    """A `node_modules` of about `count` folders: packages of 25 folders each."""
    for package in range(max(count // 25, 0)):
        for i in range(24):
            (project / "node_modules" / f"p{package}" / f"d{i % 6}" / f"e{i}").mkdir(
                parents=True, exist_ok=True
            )


def lay_out(base: Path, nested: int) -> Path:
    project = base / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    level = [project]
    for count in FOLDERS:
        level = [folder / f"d{i}" for folder in level for i in range(count)]
        for folder in level:
            folder.mkdir()
    for i in range(nested):
        lib = project / "d0" / f"d{i % FOLDERS[1]}" / f"lib{i}"
        lib.mkdir()
        subprocess.run(["git", "init", "-q", str(lib)], check=True)
        subprocess.run(
            ["git", "-C", str(lib), "remote", "add", "origin", "https://example.invalid/x"], check=True
        )
    return project


def micros(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.9)] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--nested", type=int, default=4, help="repositories below the root")
    parser.add_argument("--dependencies", type=int, default=0, help="folders in a node_modules")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as raw:
        base = Path(raw).resolve()
        project = lay_out(base, args.nested)
        dependencies(project, args.dependencies)
        scope = WorkspaceScope(project)
        sandbox = Sandbox(scope, state=base / "state", home=base)
        roots = scope.roots
        started = time.perf_counter()
        assert len(planted.watch(roots).repos) == args.nested
        first = time.perf_counter() - started
        wraps: list[float] = []
        checks: list[float] = []
        walks: list[float] = []
        for _ in range(args.rounds):
            order = [0, 1, 2]
            random.shuffle(order)
            for which in order:
                started = time.perf_counter()
                if which == 0:
                    sandbox.wrap(["bash", "-c", "true"], cwd=project, command="true", own_fds=[])
                    sandbox.after_command()
                    wraps.append(time.perf_counter() - started)
                elif which == 1:
                    assert planted.undo(planted.watch(roots), roots) == []
                    checks.append(time.perf_counter() - started)
                else:
                    for _twice in range(2):
                        for root in roots:
                            repo_finder.bounded_walk(str(root))
                    walks.append(time.perf_counter() - started)
        (wrap_median, wrap_p90), (check_median, check_p90) = micros(wraps), micros(checks)
        walk_median, walk_p90 = micros(walks)
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"wrap + after_command (check included): median {wrap_median:.0f} us, p90 {wrap_p90:.0f} us")
        print(
            f"planted.watch + undo ({args.nested} nested repositories, "
            f"{FOLDERS[0] * (1 + FOLDERS[1] * (1 + FOLDERS[2]))} folders, "
            f"+{args.dependencies} in node_modules): "
            f"median {check_median:.0f} us, p90 {check_p90:.0f} us"
        )
        print(f"first check (one walk of each root, a watch per folder): {first * 1e3:.1f} ms")
        print(
            f"the two bounded walks of the check before round 12: median {walk_median:.0f} us, "
            f"p90 {walk_p90:.0f} us"
        )
        print(f"ratio check / wrap (medians): {check_median / wrap_median:.2f}")


if __name__ == "__main__":
    main()
