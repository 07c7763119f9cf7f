"""`hermes-acp run`: the server in-process vs a child `hermes-acp --stdio`.

Both carry the same JSON lines through the same LineTransport; the child costs a second
interpreter start and its imports. Measured from spawning `hermes-acp run "hi"` to the
first byte of the answer on stdout, and to the exit, alternating the two so load hits
both alike. The reference is the child, in the same run; the target is that in-process
is not slower (ratio ≤ 1.0).

    python -m benchmarks.bench_terminal
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.fake_process import FakeProviderProcess
from tests.support.acp_harness import server_env
from tests.support.fake_provider import Reply

REPEATS = 7


def one_run(env: dict[str, str], cwd: Path, place: str) -> tuple[float, float]:
    """(seconds to the first answer byte, seconds to exit)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "hermes_acp", "run", "--server", place, "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert process.stdout is not None
    first = process.stdout.read(1)
    first_at = time.perf_counter() - start
    process.stdout.read()
    code = process.wait()
    assert first and code == 0, f"run --server {place} failed ({code})"
    return first_at, time.perf_counter() - start


def main() -> int:
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        env = server_env(root, fake)
        env["HERMES_ACP_LOG_LEVEL"] = "warning"
        env["PYTHONPATH"] = os.getcwd()
        times: dict[str, list[tuple[float, float]]] = {"in-process": [], "child": []}
        fake.script([Reply(text="Hello there.")] * (2 * REPEATS + 2))
        one_run(env, root / "project", "in-process")  # warm the page cache and the store
        one_run(env, root / "project", "child")
        for _ in range(REPEATS):
            for place in times:
                times[place].append(one_run(env, root / "project", place))
    first = {place: statistics.median(t[0] for t in runs) for place, runs in times.items()}
    total = {place: statistics.median(t[1] for t in runs) for place, runs in times.items()}
    for place in times:
        first_ms, exit_ms = first[place] * 1000, total[place] * 1000
        print(f"{place:>10}: first answer byte {first_ms:6.0f} ms, exit {exit_ms:6.0f} ms")
    ratio = first["in-process"] / first["child"]
    print(f"in-process / child, to the first answer byte: {ratio:.2f}x (target <= 1.0x)")
    return 0 if ratio <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
