"""Checkpoints (core/rewind/checkpoints.py) on a 10,000-file repository, beside a shadow git
repository (its own GIT_DIR, no config) snapshotting the same tree in the same run.

1. first snapshot: every file read, hashed and copied into the store;
2. a later turn's snapshot, 10 files changed: a stat per file, the changed ones copied;
3. the first snapshot of a new session (a new process: nothing cached, objects present);
4. disk used by the store after 1 and after 2, vs the shadow repository's.
The floor of every snapshot is the listing (`rg --files`), measured alone too.

Run: python -m benchmarks.bench_checkpoints [--files N] [--rounds N]
Exits non-zero when a later turn's snapshot takes 500 ms or more (median).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hermes_core.rewind.checkpoints import CheckpointStore, list_files

LATER_TARGET_MS = 500.0


def make_repository(root: Path, files: int) -> list[Path]:
    """`files` source files of 0.5-4 KB in a nested tree, and an ignored node_modules."""
    made: list[Path] = []
    for i in range(files):
        path = root / f"pkg{i % 20}" / f"mod{i % 7}" / f"file_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + "def f(x):\n    return x * 2  # a line of code\n" * (10 + i % 80))
        made.append(path)
    (root / ".gitignore").write_text("node_modules/\n")
    for i in range(2000):
        path = root / "node_modules" / f"dep{i % 40}" / f"index_{i}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("module.exports = 1;\n")
    return made


def change(paths: list[Path], round_number: int) -> None:
    for path in paths[round_number * 10 : round_number * 10 + 10]:
        path.write_text(path.read_text() + f"# changed in round {round_number}\n")


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class ShadowGit:
    """The alternative measured: a git dir of our own, the workspace's config never read."""

    def __init__(self, root: Path, git_dir: Path) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_PAGER": "cat",
            "HOME": str(git_dir),
        }
        self.root = root
        self.git(["init", "-q"])

    def git(self, args: list[str]) -> str:
        command = ["git", "-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", *args]
        return subprocess.run(
            command, env=self.env, cwd=self.root, capture_output=True, check=True, text=True
        ).stdout

    def snapshot(self) -> str:
        self.git(["add", "-A"])
        return self.git(["write-tree"]).strip()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    has_git = shutil.which("git") is not None
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        root = base / "repo"
        root.mkdir()
        paths = make_repository(root, options.files)
        home = base / "home"
        listing = statistics.median(timed(lambda: list_files(root)) for _ in range(3))
        tree_bytes = sum(p.stat().st_size for p in paths)

        store = CheckpointStore(home, root, "bench")
        first = timed(store.snapshot)
        first_disk = disk(home)
        shadow = ShadowGit(root, base / "shadow.git") if has_git else None
        git_first = timed(shadow.snapshot) if shadow else float("nan")
        git_first_disk = disk(base / "shadow.git") if shadow else 0

        later: list[float] = []
        git_later: list[float] = []
        for round_number in range(options.rounds):
            change(paths, round_number)
            later.append(timed(store.snapshot))
            if shadow:
                git_later.append(timed(shadow.snapshot))
        later_disk = disk(home)
        git_later_disk = disk(base / "shadow.git") if shadow else 0
        new_session = timed(CheckpointStore(home, root, "another").snapshot)

    later_ms = statistics.median(later)
    git_later_ms = statistics.median(git_later) if git_later else float("nan")
    print(f"repository: {options.files:,} files ({tree_bytes / 1e6:.1f} MB) + 2,000 ignored")
    print(f"listing alone (rg --files):          {listing:8.1f} ms")
    print(f"first snapshot:                      {first:8.1f} ms   shadow git {git_first:8.1f} ms")
    print(f"later turn, 10 files changed (med.): {later_ms:8.1f} ms   shadow git {git_later_ms:8.1f} ms")
    print(f"first snapshot of a new session:     {new_session:8.1f} ms")
    print(
        f"disk after the first / {options.rounds} later:  "
        f"{first_disk / 1e6:6.1f} / {later_disk / 1e6:6.1f} MB"
        f"   shadow git {git_first_disk / 1e6:6.1f} / {git_later_disk / 1e6:6.1f} MB"
    )
    if shadow:
        print(f"ratio to shadow git: first {first / git_first:.2f}x, later {later_ms / git_later_ms:.2f}x")
    verdict = "ok" if later_ms < LATER_TARGET_MS else "MISSED"
    print(f"later turn target < {LATER_TARGET_MS:.0f} ms: {verdict}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
