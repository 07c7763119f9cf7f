"""What one wildcard `Edit(…)` rule (`Edit(**/*.pem)`) costs a sandboxed command, against the
same sandbox without it, in one invocation.

The workspace is a git repository of a few thousand files (`--files`, in folders of 100)
with 20 `.pem` files among them (`--matches`: each is one more read-only bind, and bwrap
reads the mount table for each bind). Per launch, shuffled in one loop: the CPU of the Python
side of a launch and its after-command check (`Sandbox.wrap`, `after_command`: with the
rule, the matches looked up, snapshotted, mounted read-only and compared after), and the
wall time of a whole `true` through `LocalWorkspace.start_command` (bwrap's extra read-only
binds included). Then, once, the rule's first walk of the workspace (watches placed on every
folder, every name matched), which `for_rules` starts in a thread when the session starts.

Run: python -m benchmarks.bench_edit_globs [--runs N] [--files N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.bench_sandbox import lay_out, one
from hermes_core.policy.rule_matching import path_pattern
from hermes_core.sandbox import edit_globs
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.workspace import LocalWorkspace, WorkspaceScope

RULE = "`Edit(**/*.pem)` (the benchmark)"


def populate(project: Path, files: int, matches: int = 20) -> None:
    for index in range(files):
        folder = project / "src" / f"pkg{index // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{index % 100}.py").write_text("x = 1\n")
    for index in range(matches):
        (project / "certs").mkdir(exist_ok=True)
        (project / "certs" / f"{index}.pem").write_text("key\n")


def globs_for(project: Path, roots: tuple[Path, ...]) -> edit_globs.Globs:
    found = edit_globs.for_rules([(path_pattern("**/*.pem", project), RULE)], roots)
    assert found is not None
    return found


async def measure(runs: int, files: int, matches: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        home, project = lay_out(Path(folder))
        populate(project, files, matches)
        subprocess.run(["git", "add", "-A"], cwd=project, check=True)  # noqa: ASYNC221 (set-up)
        scope = WorkspaceScope(project)
        common = {"home": home, "hidden": (Path(folder) / "agent-home",)}
        plain, ruled = Sandbox(scope, **common), Sandbox(scope, **common)  # type: ignore[arg-type]
        started = time.process_time()
        first = edit_globs.Globs([edit_globs.Pattern(path_pattern("**/*.pem", project), RULE)], scope.roots)
        walked = len(first.launch(first=True))
        first_walk = (time.process_time() - started) * 1000
        ruled.edit_globs = globs_for(project, scope.roots)
        sandboxes = {"plain": plain, "rule": ruled}
        workspaces = {name: LocalWorkspace(scope, sandbox=s) for name, s in sandboxes.items()}
        search = os.environ.get("PATH", "/usr/bin:/bin")
        env = {"HOME": str(home), "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": search}
        shell = ["/bin/bash", "-c", "true"]
        cpu: dict[str, list[float]] = {name: [] for name in sandboxes}
        wall: dict[str, list[float]] = {name: [] for name in sandboxes}
        for name in sandboxes:  # warm-up; the rule's walk done
            for _ in range(3):
                await one(workspaces[name], "true", env)
        order = list(sandboxes)
        for _ in range(runs):
            random.shuffle(order)
            for name in order:
                sandbox = sandboxes[name]
                started = time.process_time()
                sandbox.wrap(shell, cwd=project, command="true", in_cgroup=True)
                sandbox.after_command()
                cpu[name].append((time.process_time() - started) * 1000)
                wall[name].append(await one(workspaces[name], "true", env))
    return {
        "files": float(files),
        "matches": float(walked),
        "first_walk_cpu_ms": first_walk,
        "python_cpu_plain_ms": statistics.median(cpu["plain"]),
        "python_cpu_rule_added_ms": statistics.median(cpu["rule"]) - statistics.median(cpu["plain"]),
        "wall_plain_ms": statistics.median(wall["plain"]),
        "wall_rule_added_ms": statistics.median(wall["rule"]) - statistics.median(wall["plain"]),
        "wall_ratio": statistics.median(wall["rule"]) / statistics.median(wall["plain"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--matches", type=int, default=20, help="`.pem` files among them")
    args = parser.parse_args()
    result: dict[str, float | str] = {"load_before": os.getloadavg()[0]}
    result.update(asyncio.run(measure(args.runs, args.files, args.matches)))
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
