#!/usr/bin/env python3
"""The release check: what a user and the ACP registry will get, built and tried from scratch.

    .venv/bin/python scripts/release_check.py [--no-vscode] [--keep]

1. `python -m build`: the sdist and the wheel; `twine check --strict` on both; the wheel's
   metadata (name, version, both console scripts) and its top-level packages (no `core`).
2. The wheel installed into a fresh venv: `hermes-acp --version`, an `initialize` answered by
   `hermes-acp-agent --stdio`, and a project's own top-level `core` package installed next to
   it still imports as the project's while our engine stays intact.
3. The ACP registry's launch, exactly: `uvx --cache-dir … hermes-acp-agent@<version> --stdio`
   with its validator's `initialize` and environment, resolved from a wheelhouse holding the
   built wheel and its dependencies (`--no-index`: nothing but our wheel can answer).
4. The VS Code extension: built, `vsce package` with no warning (icon, repository, licence,
   README, CHANGELOG), and the .vsix installed into code-server.

Needs the dev extras (build, twine, uv) in the running interpreter; steps 2-3 fetch the
dependencies from PyPI, step 4 uses editors/vscode's node_modules and code-server (both set up
by editors/vscode/scripts/ci.sh). Exits non-zero at the first failed step, saying which.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from registry_entry import VALIDATOR_INITIALIZE, auth_method_type, auth_problem, read_entry, uvx_launch  # noqa: E402  # noqa: E402
from set_version import read_version  # noqa: E402

DISTRIBUTION = "hermes-acp-agent"
SCRIPTS = ("hermes-acp", DISTRIBUTION)
EXTENSION = ROOT / "editors/vscode"
# A top-level name a user's project is likely to own (a Django app, say): never ours.
GENERIC_TOP_LEVEL = frozenset({"core", "tests", "test", "utils", "common", "app", "src", "scripts"})
ANSWER_DEADLINE = 600.0  # seconds; uvx installs the dependencies before the agent can answer


class CheckFailed(Exception):
    pass


def step(message: str) -> None:
    print(f"release-check: {message}", file=sys.stderr, flush=True)


def run(argv: Sequence[str | Path], *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Runs to the end; its output (stdout and stderr) when it succeeds, else CheckFailed."""
    done = subprocess.run(
        [str(part) for part in argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if done.returncode != 0:
        raise CheckFailed(f"`{' '.join(map(str, argv))}` exited {done.returncode}:\n{done.stdout[-4000:]}")
    return done.stdout


# -- 1. build ----------------------------------------------------------------------------------


def build(work: Path, version: str) -> tuple[Path, Path]:
    dist = work / "dist"
    step("building the sdist and the wheel (python -m build)")
    run([sys.executable, "-m", "build", "--outdir", dist, ROOT])
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise CheckFailed(f"expected one sdist and one wheel in {dist}, found {sdists + wheels}")
    step("twine check --strict")
    run([sys.executable, "-m", "twine", "check", "--strict", sdists[0], wheels[0]])
    check_wheel(wheels[0], version)
    check_sdist(sdists[0])
    return sdists[0], wheels[0]


def check_wheel(wheel: Path, version: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    if (metadata["Name"], metadata["Version"]) != (DISTRIBUTION, version):
        raise CheckFailed(
            f"the wheel is {metadata['Name']} {metadata['Version']}, not {DISTRIBUTION} {version}"
        )
    missing = [script for script in SCRIPTS if f"\n{script} = hermes_acp.cli:main" not in f"\n{entry_points}"]
    if missing:
        raise CheckFailed(f"the wheel has no console script {missing}:\n{entry_points}")
    top_level = {
        name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))
    }
    clashing = top_level & GENERIC_TOP_LEVEL
    if clashing:
        raise CheckFailed(
            f"the wheel installs top-level {sorted(clashing)}: a user's project may own that name"
        )
    step(f"wheel {wheel.name}: top-level packages {sorted(top_level)}, scripts {', '.join(SCRIPTS)}")


def engine_package(wheel: Path) -> str:
    """The wheel's top-level package that is not the protocol face: the engine's import name."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist() if name.endswith("/__init__.py")}
    (engine,) = tops - {"hermes_acp"}
    return engine


def check_sdist(sdist: Path) -> None:
    import tarfile

    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = {"LICENSE", "README.md", "pyproject.toml", "hermes_acp/__init__.py"} - names
    if missing:
        raise CheckFailed(f"the sdist lacks {sorted(missing)}")


# -- 2. a fresh venv ---------------------------------------------------------------------------


def check_fresh_venv(work: Path, wheel: Path, version: str) -> None:
    venv = work / "venv"
    step("installing the wheel into a fresh venv")
    run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", wheel])
    run([python, "-m", "pip", "check"])
    printed = run([venv / "bin" / "hermes-acp", "--version"]).strip()
    if printed != f"hermes-acp {version}":
        raise CheckFailed(f"`hermes-acp --version` printed {printed!r}")
    home = work / "home-venv"
    answer = initialize([str(venv / "bin" / DISTRIBUTION), "--stdio"], validator_env(home), cwd=work)
    step(f"fresh venv: {describe(answer)}")
    check_project_core_beside_us(work, venv, wheel)


def check_project_core_beside_us(work: Path, venv: Path, wheel: Path) -> None:
    """A project with its own top-level `core` (and `core/models.py`, as a Django app has)
    installed into the same venv keeps its `core`, and ours stays intact."""
    project = make_wheel(
        work / "project-wheel",
        "someproject",
        {"core/__init__.py": 'OWNER = "someproject"\n', "core/models.py": 'OWNER = "someproject"\n'},
    )
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", "--no-deps", project])
    engine = engine_package(wheel)
    probe = (
        "import core, core.models, importlib\n"
        "assert (core.OWNER, core.models.OWNER) == ('someproject', 'someproject')\n"
        f"engine = importlib.import_module('{engine}.models')\n"
        "assert not hasattr(engine, 'OWNER'), 'the project overwrote our engine'\n"
        "print(engine.__file__)\n"
    )
    try:
        run([python, "-c", probe], cwd=work)
    except CheckFailed as exc:
        raise CheckFailed(f"a project's own `core` collides with our engine `{engine}`: {exc}") from None
    answer = initialize(
        [str(venv / "bin" / "hermes-acp"), "--stdio"], validator_env(work / "home-core"), cwd=work
    )
    step(
        f"a project's own `core` beside us: it imports its own, our engine is `{engine}`; {describe(answer)}"
    )


def make_wheel(folder: Path, name: str, files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel, written by hand: no build backend, no network."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-1.0.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: release_check\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{path},,\n" for path in [*contents, f"{info}/RECORD"])
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**contents, f"{info}/RECORD": record}.items():
            archive.writestr(path, text)
    return wheel


# -- 3. the registry's uvx launch --------------------------------------------------------------


def check_registry_uvx(work: Path, wheel: Path, version: str) -> None:
    package, *args = uvx_launch(read_entry())
    if package != f"{DISTRIBUTION}@{version}":
        raise CheckFailed(f"agent.json launches {package!r}, the build is {DISTRIBUTION}@{version}")
    wheelhouse = work / "wheelhouse"
    step("collecting the wheel and its dependencies into a wheelhouse (pip download)")
    run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", wheelhouse, wheel])
    uvx_binary = shutil.which("uvx", path=str(Path(sys.executable).parent)) or shutil.which("uvx")
    if uvx_binary is None:
        raise CheckFailed("no uvx: install the dev extras (they include uv)")
    sandbox = work / "uvx-sandbox"
    cache = sandbox / "uv-cache"
    cache.mkdir(parents=True)
    # The registry runs `uvx --cache-dir <cache> <package> <args>`; where the package comes from
    # is uv's own setting, given here by its environment variables.
    env = validator_env(sandbox / "auth-home")
    env.update(UV_NO_INDEX="1", UV_FIND_LINKS=str(wheelhouse), UV_PYTHON_DOWNLOADS="never")
    command = [uvx_binary, "--cache-dir", str(cache), package, *args]
    step(f"the registry's launch: {' '.join(command)}")
    answer = initialize(command, env, cwd=sandbox)
    if answer["agentInfo"]["version"] != version:
        raise CheckFailed(f"uvx started version {answer['agentInfo']['version']}, not {version}")
    step(f"registry launch: {describe(answer)}")


def validator_env(home: Path) -> dict[str, str]:
    """What the registry's auth check passes to an agent: a few variables, a sandbox HOME."""
    home.mkdir(parents=True, exist_ok=True)
    passed = ("PATH", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_CACHE_HOME")
    env = {name: os.environ[name] for name in passed if os.environ.get(name)}
    env.update(TERM="dumb", HOME=str(home))
    return env


def initialize(command: list[str], env: dict[str, str], *, cwd: Path) -> dict[str, Any]:
    """Starts `command`, sends the validator's `initialize`, returns the result once the agent
    has answered it and, its stdin closed, exited cleanly. The registry's verdict is checked:
    a `terminal` or `agent` auth method."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin and process.stdout and process.stderr
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": VALIDATOR_INITIALIZE}
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()
        line = _read_line(process, ANSWER_DEADLINE)
        process.stdin.close()
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        stderr = process.stderr.read().decode(errors="replace")
    if not line:
        raise CheckFailed(f"`{' '.join(command)}` wrote no answer; its stderr:\n{stderr[-4000:]}")
    reply = json.loads(line)  # anything else on stdout breaks every client
    if code != 0:
        raise CheckFailed(f"`{' '.join(command)}` exited {code} after answering; stderr:\n{stderr[-4000:]}")
    if "result" not in reply:
        raise CheckFailed(f"initialize failed: {reply}")
    problem = auth_problem(reply["result"].get("authMethods", []))
    if problem:
        raise CheckFailed(f"the registry's auth check would refuse us: {problem}")
    return reply["result"]


def _read_line(process: subprocess.Popen[bytes], deadline: float) -> bytes:
    assert process.stdout
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        ready, _, _ = select.select([process.stdout], [], [], end - time.monotonic())
        if ready:
            return process.stdout.readline()
    raise CheckFailed(f"no answer to initialize within {deadline:.0f} s")


def describe(answer: dict[str, Any]) -> str:
    methods = ", ".join(f"{m['id']}({auth_method_type(m)})" for m in answer["authMethods"])
    return (
        f"{answer['agentInfo']['name']} {answer['agentInfo']['version']} answered initialize; auth {methods}"
    )


# -- 4. the VS Code extension ------------------------------------------------------------------


def check_vscode(work: Path, version: str) -> None:
    if not (EXTENSION / "node_modules" / ".bin" / "vsce").exists():
        step("npm ci (editors/vscode)")
        run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=EXTENSION)
    step("building the extension and packaging it (vsce package)")
    run(["npx", "--no-install", "tsc", "-p", "."], cwd=EXTENSION)
    run(["node", "scripts/build.mjs", "--production"], cwd=EXTENSION)
    vsix = work / f"hermes-acp-{version}.vsix"
    output = run(
        ["npx", "--no-install", "vsce", "package", "--no-dependencies", "--out", vsix], cwd=EXTENSION
    )
    warnings = [line for line in output.splitlines() if "WARNING" in line.upper() or "[y/N]" in line]
    if warnings:
        raise CheckFailed("vsce package warned:\n" + "\n".join(warnings))
    with zipfile.ZipFile(vsix) as archive:
        names = {name.lower() for name in archive.namelist()}  # vsce writes readme.md, changelog.md
        manifest = json.loads(archive.read("extension/package.json"))
    wanted = {
        f"extension/{name}".lower() for name in ("README.md", "CHANGELOG.md", "LICENSE.txt", manifest["icon"])
    }
    if not wanted <= names or manifest["version"] != version:
        raise CheckFailed(f"the .vsix lacks {sorted(wanted - names)} or is not version {version}")
    if (EXTENSION / "LICENSE.txt").read_bytes() != (ROOT / "LICENSE").read_bytes():
        raise CheckFailed("editors/vscode/LICENSE.txt is not the repository's LICENSE")
    step(f"{vsix.name}: no warnings, {len(names)} files")
    code_server = run(["bash", "scripts/setup-e2e.sh"], cwd=EXTENSION).strip().splitlines()[-1]
    profile = ["--extensions-dir", str(work / "cs-extensions"), "--user-data-dir", str(work / "cs-data")]
    run([code_server, *profile, "--install-extension", vsix], cwd=work)
    listed = run([code_server, *profile, "--list-extensions", "--show-versions"], cwd=work).split()
    if f"hermes-acp.hermes-acp@{version}" not in listed:
        raise CheckFailed(f"code-server lists {listed}, not hermes-acp.hermes-acp@{version}")
    step(f"code-server installed hermes-acp.hermes-acp@{version}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-vscode", action="store_true", help="skip the VS Code extension")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    args = parser.parse_args(argv)
    version = read_version()
    work = Path(tempfile.mkdtemp(prefix="hermes-release-check-"))
    step(f"version {version}, work folder {work}")
    try:
        _sdist, wheel = build(work, version)
        check_fresh_venv(work, wheel, version)
        check_registry_uvx(work, wheel, version)
        if not args.no_vscode:
            check_vscode(work, version)
    except CheckFailed as exc:
        step(f"FAILED: {exc}")
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    step("all good")
    return 0


if __name__ == "__main__":
    sys.exit(main())
