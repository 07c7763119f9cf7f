"""Everyday builds in `auto` ask nothing and pass in the sandbox (issue 19): `pip install`,
`npm install`, `cargo build`, `go build` and `pytest`, each toolchain found on this machine,
through the real server with a scripted model, beside the same command run unconfined.

One real `hermes-acp --stdio` (local terminal, sandbox on, mode `auto`), the scripted
provider in a process of its own. Each build is one turn whose reply is one `terminal`
call; every build runs offline (a local wheel, a local npm dependency, a crate and a Go
module without dependencies), in a fresh copy of its project per round, in a home with
the toolchains' caches (overlays in the sandbox). The figures: permission requests the
builds caused (target 0), whether each build passed, and its median turn against the
same command line run unconfined (`bash -c`, same environment) on another fresh copy, in
the same round. A toolchain missing here is listed as such, not faked.

    python -m benchmarks.bench_builds [--rounds N] [--only 'npm install' ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

LOCAL = PLAIN_CAPABILITIES | {"terminal": False}  # commands run by the agent itself
PYTHON = Path(sys.base_prefix) / "bin" / "python3"
BUILD_CAP = 900.0  # seconds: only catches a hang (a cold cargo build on a loaded machine is slow)


def pip_project(folder: Path) -> None:
    wheel = folder / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "ANSWER = 42\n")
        archive.writestr(
            "tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n"
        )
        archive.writestr(
            "tinypkg-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(
            "tinypkg-1.0.dist-info/RECORD",
            "tinypkg/__init__.py,,\ntinypkg-1.0.dist-info/METADATA,,\n"
            "tinypkg-1.0.dist-info/WHEEL,,\ntinypkg-1.0.dist-info/RECORD,,\n",
        )


def npm_project(folder: Path) -> None:
    (folder / "dep").mkdir()
    (folder / "dep" / "package.json").write_text('{"name": "dep", "version": "1.0.0", "main": "index.js"}')
    (folder / "dep" / "index.js").write_text("module.exports = 7;\n")
    (folder / "package.json").write_text(
        '{"name": "app", "version": "1.0.0", "dependencies": {"dep": "file:dep"}}'
    )


def cargo_project(folder: Path) -> None:
    (folder / "src").mkdir()
    (folder / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n')
    (folder / "src" / "main.rs").write_text('fn main() { println!("{}", 6 * 7); }\n')


def go_project(folder: Path) -> None:
    (folder / "go.mod").write_text("module example.com/app\n\ngo 1.20\n")
    (folder / "main.go").write_text('package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(6 * 7) }\n')


def pytest_project(folder: Path) -> None:
    (folder / "test_math.py").write_text("def test_add():\n    assert 1 + 1 == 2\n")


# name: (the program it needs, how its project is laid out, the command line, what its output holds)
BUILDS: dict[str, tuple[str, Callable[[Path], None], str, str]] = {
    "pip install": (
        "pip3",
        pip_project,
        f"{PYTHON} -m venv .venv && .venv/bin/pip install -q --no-index tinypkg-1.0-py3-none-any.whl "
        "&& .venv/bin/pip show tinypkg",
        "Version: 1.0",
    ),
    "npm install": (
        "npm",
        npm_project,
        "npm install --offline --no-audit --no-fund -s && npm ls dep",
        "dep@1.0.0",
    ),
    "cargo build": ("cargo", cargo_project, "cargo build --offline -q && ./target/debug/app", "42"),
    "go build": ("go", go_project, "go build -o app . && ./app", "42"),
    "pytest": ("pytest", pytest_project, f"{sys.executable} -m pytest -q -p no:cacheprovider", "1 passed"),
}


def toolchain_env(home: Path) -> dict[str, str]:
    """What the builds need from this machine (rustup's toolchains live in the real home;
    the sandbox sees them read-only)."""
    env = {
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
    }
    real_home = Path.home()
    if "RUSTUP_HOME" not in os.environ and (real_home / ".rustup").is_dir():
        env["RUSTUP_HOME"] = str(real_home / ".rustup")
    if (real_home / ".cargo" / "bin").is_dir():
        env["PATH"] = f"{os.environ.get('PATH', '/usr/bin:/bin')}:{real_home / '.cargo' / 'bin'}"
    return env


def lay_out_home(home: Path) -> None:
    for cache in (".cache/pip", ".npm", ".cargo/registry", "go/pkg/mod", ".cache/go-build"):
        (home / cache).mkdir(parents=True, exist_ok=True)


def fresh(base: Path, name: str, tag: str) -> Path:
    folder = base / f"{name.replace(' ', '-')}-{tag}"
    folder.mkdir()
    BUILDS[name][1](folder)
    return folder


def unconfined(command: str, cwd: Path, env: dict[str, str]) -> tuple[float, bool, str]:
    started = time.perf_counter()
    done = subprocess.run(["/bin/bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode == 0, done.stdout + done.stderr


def tool_result(bodies: list[dict[str, object]]) -> str:
    messages = bodies[-1]["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "tool"][-1]["content"])


async def main(rounds: int, only: list[str]) -> int:
    present = {
        name: spec
        for name, spec in BUILDS.items()
        if shutil.which(spec[0], path=toolchain_env(Path.home()).get("PATH"))
    }
    present = {name: spec for name, spec in present.items() if not only or name in only}
    missing = [name for name in BUILDS if name not in present]
    load = os.getloadavg()[0]
    results: dict[str, dict[str, list[float]]] = {
        name: {"sandboxed": [], "unconfined": []} for name in present
    }
    failures: list[str] = []
    asked: list[str] = []
    with FakeProviderProcess() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        lay_out_home(home)
        work = home / "work"
        work.mkdir()
        extra = toolchain_env(Path.home())
        env = server_env(home, None, HERMES_ACP_LOG_LEVEL="warning", **extra)
        env.update(OPENAI_BASE_URL=fake.openai_base_url, OPENAI_API_KEY="test")
        direct_env = {k: v for k, v in env.items() if not k.startswith(("HERMES_ACP_", "OPENAI_"))}
        async with spawn_server(env, check_schema=False) as server:
            client: AcpClient = server.sdk_client(LOCAL, permission="allow_once")
            await client.initialize()
            for round_ in range(rounds):
                for name, (_, _, command, expected) in present.items():
                    project = fresh(work, name, f"agent-{round_}")
                    reference = fresh(work, name, f"ref-{round_}")
                    sid = (await client.new_session(project))["sessionId"]
                    await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
                    call = ToolCallSpec("terminal", {"command": command}, id=f"build-{round_}")
                    fake.script([Reply(tool_calls=[call]), Reply(text="built")])
                    before = fake.request_count()
                    asked_before = len(client.permission_requests)
                    started = time.perf_counter()
                    assert await client.prompt(sid, f"run {name}", within=BUILD_CAP) == {
                        "stopReason": "end_turn"
                    }
                    results[name]["sandboxed"].append(time.perf_counter() - started)
                    print(f"{name}: {results[name]['sandboxed'][-1]:.2f} s in the sandbox", file=sys.stderr)
                    for params in client.permission_requests[asked_before:]:
                        asked.append(f"{name}: {params['toolCall'].get('title')}")
                    output = tool_result(fake.bodies_since(before))
                    if expected not in output:
                        failures.append(f"{name} in the sandbox: {output[-600:]}")
                    seconds, ok, text = unconfined(command, reference, direct_env)
                    results[name]["unconfined"].append(seconds)
                    if not ok or expected not in text:
                        failures.append(f"{name} unconfined: {text[-600:]}")
            await client.aclose()
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores), {rounds} rounds")
    for name, times in results.items():
        inside, outside = statistics.median(times["sandboxed"]), statistics.median(times["unconfined"])
        ratio = inside / outside
        print(
            f"{name:12} sandboxed {inside * 1e3:6.0f} ms, unconfined {outside * 1e3:6.0f} ms ({ratio:.2f}x)"
        )
    if missing:
        print("not on this machine: " + ", ".join(missing))
    print(f"permission requests in auto: {len(asked)} (target 0); failed: {len(failures)}")
    for request in asked:
        print(f"  asked: {request}")
    for failure in failures:
        print("  " + failure.replace("\n", "\n    "))
    return 0 if not asked and not failures else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", action="append", default=[], help="one build by name (repeatable)")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.rounds, arguments.only)))
