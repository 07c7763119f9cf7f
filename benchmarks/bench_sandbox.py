"""The cost of the command sandbox per command, measured against unconfined runs in one run.

Runs three classes of command line through `LocalWorkspace.start_command` (start, wait,
output, release: what the terminal tool does): a utility (`true`: no writable cache
overlay), a known build program (`pip install -r requirements.txt`, a stand-in `pip`
installed outside the workspace: `~/.cache`'s overlay only) and an unknown program (a
workspace script, `./build.sh`: every overlay). Each with the sandbox off, on (network
on), on with the network off, on with every overlay whatever the command (the launch
before commands were told apart), on with the mounts worked out before bwrap starts and
passed on its command line (before they went on a pipe while bwrap starts: `late_args`)
and on without caches, all shuffled in one loop so load
on the machine hits all alike. The workspace is a git repository (its config, hooks and
info bound read-only) in a home with the usual toolchain caches, whose sandbox layers
hold something (as after a build), and secrets (hidden), so every launch carries the full
fence. The per-command cost is each variant's median and p90 minus the unconfined median
and p90 of the same class; the ratio is of the medians. Then the same for everyday git
work (`git add`, `commit`, `status`, `log`, `diff`, `branch`, `stash`; no hook installed:
no writable overlay). The load average and `uptime` are printed with the figures: on a
shared machine they move with it.

With --landlock (needs `pip install --pre landlock`, not a dependency), also the
alternative the README weighs: the same command confined by Landlock, applied in the
child before exec (`preexec_fn`) and through a Python launcher (what an editor terminal,
which runs a command line, would need).

With --breakdown, where a launch's time goes, in one shuffled loop (started directly with
`subprocess.run`, not through the agent): bare `bash -c true`; bwrap with only its base
arguments; plus the fence's mounts without the cache overlays; the same with each cache
seen read-only through its layers (what a utility gets); plus the overlays (the full
launch where no pids cgroup is writable); the full launch moved into the session's pids
cgroup by a `sh` before bwrap (what an editor's terminal gets); the full launch started
from the session's thread that joined the cgroup once (what a local command gets); the
full launch until its output pipe closes (bwrap's pid 1 holds it while the kernel tears the
mounts down: what the agent waited for before it took bwrap's exit as the end); and the
Python side, building one launch (`Sandbox.wrap`) for a local utility command (its line read
for the caches it may write) and for an editor terminal (every overlay, no line read).
Then the price of one mount of each kind bwrap makes (`mount_price_*`: 20 of a kind
against none): a tmpfs; a tmpfs remounted read-only (what an empty read-only folder cost
before); a read-only bind of /dev/null over a file (a hidden secret file); a read-only
overlay of two empty folders (`empty_layers`, what an empty read-only folder costs now);
a writable overlay whose work dir an earlier mount used (what a cache's overlay cost
before), and one whose work dir no mount used yet (`work_dirs`, a local command's now).

With --source DIR (another checkout, e.g. main's: `git -C MAIN archive HEAD | tar -x -C DIR`),
before against after in one invocation: --pairs rounds, each running this benchmark (this
tree's: the same instrument for both) once with DIR's engine and once with this tree's,
in alternating order (one process each: two versions of the engine cannot share one), with
the same interpreter and settings; each figure is printed per round for both, then the
medians of the rounds. Keep DIR out of /tmp:
a launch keeps the agent's own code visible there, which would add a mount to DIR's runs.

With --cpu, the CPU a launch costs, which a loaded machine disturbs far less than the
wall time: each class's launch of `bash -c true` (its mounts as that class gets them) and a
bare `bash -c true`, shuffled, each run in a cpuacct cgroup of its own (bwrap, its pid 1
and the teardown of its mounts; v1 `cpuacct` or v2 `cpu.stat`, which needs root or a
delegated cgroup), median added per launch; and the CPU of the Python side of a launch
(`Sandbox.wrap` and `environment`) per class.

Run: python -m benchmarks.bench_sandbox [--runs N] [--landlock] [--breakdown] [--cpu] [--source DIR]
Exits non-zero when the sandbox adds 20 ms or more (median) to the utility class (network
on or off) or to the git work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_core.sandbox import caches, limits
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.sandbox.bwrap_args import launch_argv
from hermes_core.sandbox.empty_layers import overlay_args
from hermes_core.sandbox.probe import BASE_ARGS
from hermes_core.workspace import LocalWorkspace, WorkspaceScope

TARGET_ADDED_MS = 20.0


GIT_ID = "-c user.name=bench -c user.email=bench@example.com"
EVERYDAY_GIT = (
    f"echo $RANDOM >> notes.txt && git add -A && git {GIT_ID} commit -qm step && git status --short "
    f"&& git log --oneline -3 >/dev/null && git diff HEAD~1 --stat >/dev/null && git branch -f scratch "
    "&& echo wip >> notes.txt && git stash -q && git stash pop -q"
)
CACHES = (".cache/pip", ".npm", ".cargo/registry", ".gradle/caches", "go/pkg/mod", ".m2/repository")
SECRETS = (".ssh/id_ed25519", ".aws/credentials", ".netrc", ".npmrc", ".bash_history")


async def one(workspace: LocalWorkspace, command: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    run = await workspace.start_command(command, env=env)
    status = await run.wait()
    output, _ = await run.output()
    await run.release()
    elapsed = (time.perf_counter() - started) * 1000
    if status.exit_code != 0:
        raise SystemExit(f"`{command}` failed in the benchmark: {status}\n{output}")
    return elapsed


def lay_out(base: Path) -> tuple[Path, Path]:
    """A home with caches and secrets, and a git repository in it as the workspace."""
    home = base / "home"
    for cache in CACHES:
        (home / cache).mkdir(parents=True)
    for secret in SECRETS:
        (home / secret).parent.mkdir(parents=True, exist_ok=True)
        (home / secret).write_text("secret\n")
    tools = home / "tools"  # an installed tool, outside the workspace: a stand-in pip
    tools.mkdir()
    (tools / "pip").write_text("#!/bin/sh\nexit 0\n")
    (tools / "pip").chmod(0o755)
    project = home / "project"
    project.mkdir()
    (project / "build.sh").write_text("#!/bin/sh\nexit 0\n")  # the workspace's own script
    (project / "build.sh").chmod(0o755)
    (project / "notes.txt").write_text("start\n")
    (project / ".env").write_text("TOKEN=x\n")
    (project / ".gitignore").write_text(".env\n")
    subprocess.run(
        f"git init -q && git add -A && git {GIT_ID} commit -qm first", shell=True, cwd=project, check=True
    )
    return home, project


class EveryOverlay(Sandbox):
    """The launch as it was before commands were told apart: every cache's overlay,
    whatever the command (what an editor's terminal and a hook still get)."""

    def wrap(self, argv: list[str], **options: Any) -> list[str]:
        options.pop("command", None)
        return super().wrap(argv, **options)

    def launch_options(self, **options: Any) -> list[str]:  # the local path's (`late_args`)
        options.pop("command", None)
        return super().launch_options(**options)


class MountsOnArgv(Sandbox):
    """The local launch with its mounts on bwrap's command line, worked out before bwrap
    starts (before `late_args`)."""

    mounts_on_a_pipe = False


# The command classes measured (see the module's doc): the overlays each one gets.
CLASSES = {
    "utility": "true",  # no writable overlay
    "build": "pip install -r requirements.txt",  # a stand-in pip on PATH: ~/.cache's overlay only
    "unknown": "./build.sh",  # a workspace script: every overlay
}


async def measure(runs: int, commands: dict[str, str]) -> dict[str, float]:
    """Added ms per command for each class and variant, all interleaved in one loop."""
    with tempfile.TemporaryDirectory() as folder:
        home, project = lay_out(Path(folder))
        scope = WorkspaceScope(project)
        state = Path(folder) / "agent-home" / "sandbox" / "caches"
        common = {"home": home, "state": state, "hidden": (Path(folder) / "agent-home",)}
        variants = {
            "unconfined": LocalWorkspace(scope, sandbox=Sandbox(scope, mode="off")),
            "sandboxed": LocalWorkspace(scope, sandbox=Sandbox(scope, **common)),  # type: ignore[arg-type]
            "sandboxed_no_network": LocalWorkspace(scope, sandbox=Sandbox(scope, network=False, **common)),  # type: ignore[arg-type]
            # Before this round: every overlay for every command.
            "sandboxed_every_overlay": LocalWorkspace(scope, sandbox=EveryOverlay(scope, **common)),  # type: ignore[arg-type]
            # The mounts worked out before bwrap starts, on its command line (before `late_args`).
            "sandboxed_mounts_on_argv": LocalWorkspace(scope, sandbox=MountsOnArgv(scope, **common)),  # type: ignore[arg-type]
            # sandbox_caches = []: no overlay at all (the caches are then read-only)
            "sandboxed_no_caches": LocalWorkspace(scope, sandbox=Sandbox(scope, caches=(), **common)),  # type: ignore[arg-type]
        }
        # As after some builds: each cache's layer holds something, so a command that does
        # not write a cache sees it through a read-only overlay (a cache the sandbox never
        # wrote is simply the user's, read-only: cheaper still).
        for layer in caches.overlays(caches.DEFAULT_CACHES, home, state):
            (layer.upper / "from-a-build").write_text("cached\n")
        env = {
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "PATH": f"{home / 'tools'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        }
        for workspace in variants.values():
            sandbox = workspace.sandbox
            if sandbox is not None and sandbox.mode != "off" and sandbox.confinement != "sandboxed":
                raise SystemExit(f"the sandbox cannot start here: {sandbox.availability.reason}")
        pairs = [(kind, name) for kind in commands for name in variants]
        for kind, name in pairs:
            for _ in range(3):  # warm-up: page cache, the probe
                await one(variants[name], commands[kind], env)
        samples: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
        for _ in range(runs):
            random.shuffle(pairs)
            for kind, name in pairs:
                samples[(kind, name)].append(await one(variants[name], commands[kind], env))
    out: dict[str, float] = {}
    for kind in commands:
        base, base_p90 = statistics.median(samples[(kind, "unconfined")]), p90(samples[(kind, "unconfined")])
        out[f"{kind}_unconfined_ms"] = base
        for name in variants:
            if name == "unconfined":
                continue
            suffix = name.removeprefix("sandboxed")
            out[f"{kind}_added{suffix}_ms"] = statistics.median(samples[(kind, name)]) - base
            out[f"{kind}_added{suffix}_p90_ms"] = p90(samples[(kind, name)]) - base_p90
        out[f"{kind}_ratio"] = statistics.median(samples[(kind, "sandboxed")]) / base
    return out


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def measure_breakdown(runs: int) -> dict[str, float]:
    """Medians in ms of each step from bare bash to the full launch (see the module's doc)."""
    with tempfile.TemporaryDirectory() as folder:
        home, project = lay_out(Path(folder))
        state = Path(folder) / "agent-home" / "sandbox" / "caches"
        sandbox = Sandbox(
            WorkspaceScope(project), home=home, state=state, hidden=(Path(folder) / "agent-home",)
        )
        if sandbox.confinement != "sandboxed" or sandbox.bwrap is None:
            raise SystemExit(f"the sandbox cannot start here: {sandbox.availability.reason}")
        shell = ["/bin/bash", "-c", "true"]
        full = sandbox.wrap(shell, cwd=project)
        sandbox.after_command()
        common = {"cwd": project, "tmp": sandbox.temp_dir, "tmp_bytes": sandbox.tmp_mb << 20, "network": True}
        capped = limits.limited(shell, sandbox.max_processes)
        mounts = sandbox.mounts()
        no_cgroup = launch_argv(sandbox.bwrap, mounts, argv=capped, new_session=False, unset=[], **common)  # type: ignore[arg-type]
        mounts.overlays = []
        no_overlays = launch_argv(sandbox.bwrap, mounts, argv=capped, new_session=False, unset=[], **common)  # type: ignore[arg-type]
        for layer in caches.overlays(caches.DEFAULT_CACHES, home, state):
            (layer.upper / "from-a-build").write_text("cached\n")
        utility = sandbox.mounts(frozenset())  # what a utility gets: each cache read-only, layered
        read_only_caches = launch_argv(
            sandbox.bwrap, utility, argv=capped, new_session=False, unset=[], **common
        )  # type: ignore[arg-type]
        thread = sandbox.launch_thread()
        joined = thread.in_cgroup.result()
        steps = {
            "bare": shell,
            "bwrap_base": [sandbox.bwrap, *BASE_ARGS, "--", *shell],
            "fence_no_overlays_no_cgroup": no_overlays,
            # The same with the caches as a utility sees them: six read-only overlays.
            "fence_read_only_caches_no_cgroup": read_only_caches,
            # Where no pids cgroup is writable (a regular user, as a rule): no join at all.
            "full_no_cgroup": no_cgroup,
            # The same, until its output pipe closes (what the agent waited for before): bwrap's
            # pid 1 holds the pipe until the kernel has torn the mounts down.
            "full_until_pipe_closes": no_cgroup,
        }
        if joined:
            steps["full_sh_joins_cgroup"] = full  # an editor terminal's launch
            steps["full_from_cgroup_thread"] = no_cgroup  # a local command's launch
        env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        samples: dict[str, list[float]] = {name: [] for name in steps}
        samples["python_wrap"] = []  # a local utility command's launch: its line read too
        samples["python_wrap_every_overlay"] = []  # an editor terminal's: no line to read
        order = list(steps)

        def timed(argv: list[str], *, until_eof: bool = False) -> float:
            started = time.perf_counter()
            output = subprocess.PIPE if until_eof else None
            subprocess.run(argv, cwd=project, env=env, check=True, stdout=output, stderr=output)
            return (time.perf_counter() - started) * 1000

        for _ in range(runs):
            # Shuffled: a cgroup join right after another is cheaper (the kernel's switch
            # to its slow path is still warm), so a fixed order would favour one step.
            random.shuffle(order)
            for name in order:
                argv = steps[name]
                if name == "full_from_cgroup_thread":
                    samples[name].append(thread.submit(functools.partial(timed, argv)).result())
                else:
                    samples[name].append(timed(argv, until_eof=name == "full_until_pipe_closes"))
            for name, line in (("python_wrap", "true"), ("python_wrap_every_overlay", None)):
                started = time.perf_counter()
                sandbox.wrap(shell, cwd=project, command=line, search_path=env["PATH"])
                samples[name].append((time.perf_counter() - started) * 1000)
                sandbox.after_command()
    return {f"breakdown_{name}_ms": statistics.median(values) for name, values in samples.items()}


class CpuMeter:
    """CPU used by a process and everything it leaves (down to the teardown of its mounts):
    it starts in a cgroup of its own, read when the cgroup is empty again."""

    def __init__(self, name: str) -> None:
        v1 = Path("/sys/fs/cgroup/cpuacct")
        self.path = (v1 if v1.is_dir() else Path("/sys/fs/cgroup")) / f"bench-sandbox-{os.getpid()}-{name}"
        self.path.mkdir()
        self._usage = self.path / ("cpuacct.usage" if v1.is_dir() else "cpu.stat")

    def used_ms(self) -> float:
        text = self._usage.read_text()
        if self._usage.name == "cpu.stat":  # usage_usec N
            return int(text.split()[1]) / 1000
        return int(text) / 1e6

    def run(self, argv: list[str], cwd: Path) -> float:
        procs = self.path / "cgroup.procs"
        before = self.used_ms()
        subprocess.run(argv, cwd=cwd, check=True, preexec_fn=lambda: procs.write_text("0"))
        while procs.read_text().strip():  # bwrap's pid 1 still tearing the mounts down
            time.sleep(0.0005)
        return self.used_ms() - before

    def close(self) -> None:
        self.path.rmdir()


def _finish_work_dirs() -> None:
    try:
        from hermes_core.sandbox.work_dirs import WORK_DIRS
    except ImportError:  # a tree from before them (`--source`)
        return
    WORK_DIRS.remove_spares()


def measure_cpu(runs: int) -> dict[str, float]:
    """Median CPU ms each class's launch adds to a bare `bash -c true`, and the Python side."""
    with tempfile.TemporaryDirectory() as folder:
        home, project = lay_out(Path(folder))
        state = Path(folder) / "agent-home" / "sandbox" / "caches"
        sandbox = Sandbox(
            WorkspaceScope(project), home=home, state=state, hidden=(Path(folder) / "agent-home",)
        )
        for layer in caches.overlays(caches.DEFAULT_CACHES, home, state):
            (layer.upper / "from-a-build").write_text("cached\n")
        search = f"{home / 'tools'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
        env = {**os.environ, "HOME": str(home), "PATH": search}
        shell = ["/bin/bash", "-c", "true"]
        lines = {**CLASSES, "git": EVERYDAY_GIT}
        python: dict[str, list[float]] = {kind: [] for kind in lines}
        try:
            meters = {name: CpuMeter(name) for name in ("bare", *lines)}
        except OSError as exc:
            raise SystemExit(f"--cpu needs a cgroup it can make ({exc})") from None
        samples: dict[str, list[float]] = {name: [] for name in meters}
        order = list(meters)
        try:
            for _ in range(runs):
                # Each run's launches made anew, as a command's are: a local command's
                # overlays take work dirs no mount used yet (`work_dirs`), given back after.
                launches = {"bare": shell}
                for kind, line in lines.items():
                    started = time.process_time()
                    launches[kind] = sandbox.wrap(
                        shell, cwd=project, command=line, search_path=search, in_cgroup=True
                    )
                    sandbox.environment(env)
                    python[kind].append((time.process_time() - started) * 1000)
                random.shuffle(order)
                for name in order:
                    samples[name].append(meters[name].run(launches[name], project))
                for _ in lines:
                    sandbox.after_command()
        finally:
            for meter in meters.values():
                meter.close()
            # The give-backs' thread still removing and making work dirs in the folder
            # about to be removed.
            _finish_work_dirs()
    bare = statistics.median(samples["bare"])
    out = {"cpu_bare_ms": bare}
    for kind in lines:
        out[f"cpu_{kind}_added_ms"] = statistics.median(samples[kind]) - bare
        out[f"cpu_{kind}_python_ms"] = statistics.median(python[kind])
    return out


def measure_mount_prices(runs: int, count: int = 20) -> dict[str, float]:
    """What one mount of each kind adds to a launch, in ms: `count` of them against none,
    shuffled. bwrap reads and parses /proc/self/mountinfo for every bind and remount, so
    those cost several times a plain tmpfs or a read-only overlay (`empty_layers`). A
    writable overlay (its layers on the home's file system, as the caches' are) with the
    work dir an earlier mount used (overlayfs removes and makes its `work` folder again)
    and with a work dir no mount used yet (`work_dirs`: made, and the used one removed,
    before the launch, off the timing)."""
    bwrap = Sandbox(WorkspaceScope(Path.cwd()), mode="off").bwrap
    if bwrap is None:
        raise SystemExit("no bwrap here")
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory(dir=Path.home()) as layers:
        places = [Path(folder) / f"d{i}" for i in range(count)]
        for place in places:
            place.mkdir()
            (place.parent / f"{place.name}.file").write_text("")
        empty = (Path(folder) / "empty-a", Path(folder) / "empty-b")
        for layer in empty:
            layer.mkdir()
        base = [bwrap, *BASE_ARGS, "--bind", folder, folder]
        kinds = {
            "none": [],
            "tmpfs": [a for p in places for a in ("--tmpfs", str(p))],
            "tmpfs_remount_ro": [a for p in places for a in ("--tmpfs", str(p), "--remount-ro", str(p))],
            "ro_bind_file": [a for p in places for a in ("--ro-bind", "/dev/null", f"{p}.file")],
            "ro_overlay_empty": [a for p in places for a in overlay_args(empty, p)],
            "rw_overlay_used_work": writable_overlays(places, Path(layers) / "used"),
            "rw_overlay_fresh_work": writable_overlays(places, Path(layers) / "fresh"),
        }
        fresh = [Path(layers) / "fresh" / f"work{i}" for i in range(count)]
        samples: dict[str, list[float]] = {name: [] for name in kinds}
        order = list(kinds)
        for _ in range(runs):
            random.shuffle(order)
            for name in order:
                if name == "rw_overlay_fresh_work":
                    for work in fresh:
                        with contextlib.suppress(FileNotFoundError):
                            (work / "work").rmdir()
                started = time.perf_counter()
                subprocess.run([*base, *kinds[name], "--", "/bin/true"], check=True)
                samples[name].append((time.perf_counter() - started) * 1000)
    none = statistics.median(samples["none"])
    return {
        f"mount_price_{name}_ms": (statistics.median(values) - none) / count
        for name, values in samples.items()
        if name != "none"
    }


def writable_overlays(places: list[Path], layers: Path) -> list[str]:
    """A writable overlay on each of `places`, its upper and work dir under `layers`."""
    args: list[str] = []
    for index, place in enumerate(places):
        upper, work = layers / f"upper{index}", layers / f"work{index}"
        upper.mkdir(parents=True)
        work.mkdir()
        args += ["--overlay-src", str(place), "--overlay", str(upper), str(work), str(place)]
    return args


_LANDLOCK_RULES = """
import landlock
rules = landlock.Ruleset()
rules.allow("/", rules=landlock.FSAccess.EXECUTE | landlock.FSAccess.READ_FILE | landlock.FSAccess.READ_DIR)
rules.allow({folder!r})
rules.apply()
"""


def measure_landlock(runs: int) -> dict[str, float]:
    """`bash -c true` bare, under Landlock via preexec_fn, and via a launcher; medians in ms."""
    import subprocess

    try:
        import landlock  # noqa: F401
    except ImportError:
        raise SystemExit("--landlock needs the `landlock` package: pip install --pre landlock") from None
    with tempfile.TemporaryDirectory() as folder:
        rules = _LANDLOCK_RULES.format(folder=folder)
        argv = ["/bin/bash", "-c", "true"]
        launcher = [sys.executable, "-c", rules + f"import os; os.execv('/bin/bash', {argv!r})"]

        def preexec() -> None:
            exec(rules, {})

        variants = {
            "bare": lambda: subprocess.run(argv, check=True),
            "landlock_preexec": lambda: subprocess.run(argv, check=True, preexec_fn=preexec),
            "landlock_launcher": lambda: subprocess.run(launcher, check=True),
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(runs):
            for name, start in variants.items():
                started = time.perf_counter()
                start()
                samples[name].append((time.perf_counter() - started) * 1000)
    return {f"{name}_ms": statistics.median(values) for name, values in samples.items()}


def compare(source: Path, pairs: int, passed: list[str]) -> int:
    """Before (`source`'s engine) against after (this tree's), alternating whole runs."""
    trees = {"before": source.resolve(), "after": Path(__file__).resolve().parent.parent}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(dir=Path.home()) as shims:
        for name, tree in trees.items():
            shim = Path(shims) / name  # the tree's engine under its import names
            shim.mkdir()
            for link, folder in (("hermes_core", "core"), ("hermes_acp", "hermes_acp")):
                (shim / link).symlink_to(tree / folder)
            # the same instrument for both: this benchmark, with the tree's engine
            (shim / "benchmarks").symlink_to(Path(__file__).resolve().parent)
        for round_ in range(pairs):
            for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
                shim = Path(shims) / name
                env = {**os.environ, "PYTHONPATH": str(shim)}
                argv = [sys.executable, "-m", "benchmarks.bench_sandbox", *passed]
                done = subprocess.run(argv, cwd=shim, env=env, capture_output=True, text=True)
                start = done.stdout.find("{")
                if start < 0:
                    raise SystemExit(f"the {name} run failed:\n{done.stdout}\n{done.stderr}")
                runs[name].append(json.loads(done.stdout[start:]))
    out: dict[str, Any] = {"trees": {name: str(tree) for name, tree in trees.items()}}
    for key, value in runs["after"][0].items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        before = [float(r[key]) for r in runs["before"] if key in r]
        after = [float(r[key]) for r in runs["after"]]
        shown = " / ".join(f"{v:.2f}" for v in before) if before else "-"
        median = f"{statistics.median(before):.2f}" if before else "-"
        out[key] = (
            f"before {shown} | after {' / '.join(f'{v:.2f}' for v in after)} "
            f"| medians {median} -> {statistics.median(after):.2f}"
        )
    out["engines"] = sorted(
        {r["engine"] for name in ("before", "after") for r in runs[name] if "engine" in r}
    )
    out["uptimes"] = [r["uptime"] for name in ("before", "after") for r in runs[name]]
    print(json.dumps(out, indent=2))
    return 0


def main() -> int:
    if "--source" in sys.argv:  # before against after: this benchmark run in both trees
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("--source", type=Path, required=True)
        parser.add_argument("--pairs", type=int, default=3, help="rounds of one run per tree")
        known, passed = parser.parse_known_args(sys.argv[1:])
        return compare(known.source, known.pairs, passed)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100, help="runs per class and variant")
    parser.add_argument("--git-runs", type=int, default=40, help="everyday git runs per variant")
    parser.add_argument("--landlock", action="store_true", help="also measure Landlock (see above)")
    parser.add_argument(
        "--breakdown", action="store_true", help="also where a launch's time goes (see above)"
    )
    parser.add_argument("--cpu", action="store_true", help="only the CPU a launch costs (see above)")
    args = parser.parse_args()
    result: dict[str, float | str] = {"load_before": os.getloadavg()[0], "cores": float(os.cpu_count() or 0)}
    result["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    result["engine"] = str(Path(sys.modules[Sandbox.__module__].__file__ or "").parent)  # which tree ran
    if args.cpu:
        result.update(measure_cpu(args.runs))
        result["load_after"] = os.getloadavg()[0]
        print(
            json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}, indent=2)
        )
        return 0
    result.update(asyncio.run(measure(args.runs, CLASSES)))
    result.update(asyncio.run(measure(args.git_runs, {"git": EVERYDAY_GIT})))
    if args.landlock:
        result.update(measure_landlock(args.runs))
    if args.breakdown:
        result.update(measure_breakdown(args.runs))
        result.update(measure_mount_prices(args.runs))
    held = ("utility_added_ms", "utility_added_no_network_ms", "git_added_ms", "git_added_no_network_ms")
    worst = max(float(result[name]) for name in held)
    result["load_after"] = os.getloadavg()[0]
    result["target_added_ms"] = TARGET_ADDED_MS
    result["verdict"] = "ok" if worst < TARGET_ADDED_MS else "MISSED"
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}, indent=2))
    return 0 if worst < TARGET_ADDED_MS else 1


if __name__ == "__main__":
    sys.exit(main())
