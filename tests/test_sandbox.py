"""The sandbox on real processes: what a confined command may and may not do, and that
everyday work (pip into a venv, git, pytest, npm) still succeeds inside it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.workspace import LocalWorkspace, WorkspaceError, WorkspaceScope
from tests.support.homes import user_home


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = user_home(
        tmp_path,
        {".ssh/id_rsa": "PRIVATE\n", ".env": "HOME_SECRET=1\n", ".netrc": "machine x password hunter2\n"},
    )
    (home / ".cache").mkdir()
    (home / ".npm").mkdir()
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "project"
    path.mkdir(parents=True)
    (path / ".env").write_text("PROJECT_SETTING=visible\n")
    (tmp_path / "work" / ".env").write_text("PARENT_SECRET=1\n")
    return path


def workspace(project: Path, home: Path, **options: object) -> tuple[LocalWorkspace, Sandbox]:
    scope = WorkspaceScope(project)
    state = home / ".hermes-acp" / "sandbox" / "caches"
    sandbox = Sandbox(scope, home=home, hidden=(home / ".hermes-acp",), state=state, **options)  # type: ignore[arg-type]
    return LocalWorkspace(scope, sandbox=sandbox), sandbox


async def run(ws: LocalWorkspace, command: str, home: Path) -> tuple[int | None, str]:
    env = {"HOME": str(home), "GIT_CONFIG_GLOBAL": "/dev/null", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    command_run = await ws.start_command(command, env=env)
    try:
        status = await command_run.wait()
        output, _ = await command_run.output()
    finally:
        await command_run.release()
    return status.exit_code, output


async def test_writes_land_only_in_the_workspace_temp_and_caches(
    project: Path, home: Path, tmp_path: Path
) -> None:
    ws, sandbox = workspace(project, home)
    # A script of the project's (it may run any build tool): the caches are writable.
    (project / "build.sh").write_text('echo a > in.txt && echo b > "$TMPDIR/t" && echo c > ~/.cache/c\n')
    code, out = await run(ws, 'bash build.sh && cat in.txt "$TMPDIR/t"', home)
    assert code == 0 and out == "a\nb\n", out
    assert not (home / ".cache" / "c").exists()  # the cache is the sandbox's own overlay
    code, out = await run(ws, "cat ~/.cache/c", home)
    assert code == 0 and out == "c\n"  # ... kept for the next command
    assert not any(sandbox.temp_dir.iterdir())  # TMPDIR is a tmpfs of the command's own

    for target in (tmp_path / "outside", home / "bashrc", project.parent / "sibling"):
        code, out = await run(ws, f"echo x > {target}", home)
        assert code != 0 and "Read-only file system" in out
        assert not target.exists()
        assert sandbox.explain_refusal(out) and "outside" in (sandbox.explain_refusal(out) or "")


async def test_secrets_are_not_readable_the_projects_own_env_neither(project: Path, home: Path) -> None:
    (home / ".hermes-acp").mkdir()
    (home / ".hermes-acp" / "config.toml").write_text('api_key = "sk-live"\n')
    ws, _ = workspace(project, home)
    _, out = await run(
        ws,
        "cat ~/.ssh/id_rsa ~/.hermes-acp/config.toml ~/.env ~/.netrc ../.env 2>&1; cat .env",
        home,
    )
    for secret in ("PRIVATE", "sk-live", "HOME_SECRET", "hunter2", "PARENT_SECRET", "PROJECT_SETTING"):
        assert secret not in out, out


async def test_the_agents_model_credentials_are_not_in_a_confined_commands_environment(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the network on, `env | curl …` from a prompt-injected command would send them away.
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY_2", "HERMES_ACP_API_KEY", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, f"secret-{name}")
    monkeypatch.setenv("MY_FALLBACK_KEY", "secret-fallback")
    monkeypatch.setenv("PROJECT_TOKEN_NAME", "kept")
    ws, _ = workspace(project, home, hidden_env=frozenset({"MY_FALLBACK_KEY"}))
    code, out = await run(ws, "env", home)
    assert code == 0 and "PROJECT_TOKEN_NAME=kept" in out
    assert "secret-" not in out, out


async def test_read_only_mode_writes_nothing_but_its_temp_dir(project: Path, home: Path) -> None:
    ws, _ = workspace(project, home, mode="read-only")
    code, out = await run(ws, "echo x > in.txt", home)
    assert code != 0 and "Read-only file system" in out and not (project / "in.txt").exists()
    code, out = await run(ws, 'echo x > "$TMPDIR/t" && cat "$TMPDIR/t" && ls', home)
    assert code == 0 and out.startswith("x\n")
    code, out = await run(ws, "echo x > ~/.cache/c", home)
    assert code != 0  # the caches are not writable in read-only mode either


def test_the_notice_for_the_first_turn_is_known_once_the_sandbox_is_made(project: Path, home: Path) -> None:
    # A turn reads the notice instead of probing bwrap: it must be there before any turn.
    _, broken = workspace(project, home, bwrap=str(project / "missing-bwrap"))
    assert broken.notice is not None
    assert "cannot start" in broken.notice and "bwrap not found" in broken.notice
    _, turned_off = workspace(project, home, mode="off", bwrap=str(project / "missing-bwrap"))
    assert turned_off.notice is None  # the user chose no sandbox: nothing to warn about


async def test_the_sandbox_cannot_start_without_bwrap_and_fails_closed(project: Path, home: Path) -> None:
    ws, sandbox = workspace(project, home, bwrap=str(project / "missing-bwrap"))
    assert sandbox.confinement == "unavailable"
    assert "bwrap not found" in sandbox.describe() and "ask" in sandbox.describe()
    with pytest.raises(WorkspaceError, match="sandbox cannot start"):
        await ws.start_command("true")
    unconfined = await ws.start_command("echo approved > ran.txt", unconfined=True)  # what an approval does
    assert (await unconfined.wait()).exit_code == 0
    await unconfined.release()
    assert (project / "ran.txt").read_text() == "approved\n"


def write_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel, so pip installs offline."""
    wheel = folder / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "ANSWER = 42\n")
        archive.writestr(
            "tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n"
        )
        archive.writestr(
            "tinypkg-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(
            "tinypkg-1.0.dist-info/RECORD",
            "tinypkg/__init__.py,,\ntinypkg-1.0.dist-info/METADATA,,\n"
            "tinypkg-1.0.dist-info/WHEEL,,\ntinypkg-1.0.dist-info/RECORD,,\n",
        )
    return wheel


async def test_pip_installs_into_the_projects_venv_inside_the_sandbox(project: Path, home: Path) -> None:
    write_wheel(project)
    ws, _ = workspace(project, home)
    python = Path(sys.base_prefix) / "bin" / "python3"
    command = (
        f"{python} -m venv .venv && .venv/bin/pip install --no-index tinypkg-1.0-py3-none-any.whl "
        "&& .venv/bin/python -c 'import tinypkg; print(tinypkg.ANSWER)'"
    )
    code, out = await run(ws, command, home)
    assert code == 0, out
    assert out.rstrip().endswith("42")


@pytest.fixture
def repo(project: Path) -> Path:
    """The project as the user's git repository (made outside the sandbox, as the user would)."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text(".env\n")  # hidden in the sandbox: git must not add it
    return project


async def test_git_and_pytest_work_inside_the_sandbox(repo: Path, home: Path) -> None:
    project = repo
    (project / "test_math.py").write_text("def test_add():\n    assert 1 + 1 == 2\n")
    ws, _ = workspace(project, home)
    git = (
        "git add -A && git -c user.name=t -c user.email=t@example.com commit -qm first "
        "&& git log --oneline | wc -l"
    )
    code, out = await run(ws, git, home)
    assert code == 0 and out.strip() == "1", out
    code, out = await run(ws, f"{sys.executable} -m pytest -q test_math.py", home)
    assert code == 0 and "1 passed" in out, out


async def test_npm_installs_a_local_dependency_with_its_cache_writable(project: Path, home: Path) -> None:
    dep = project / "dep"
    dep.mkdir()
    (dep / "package.json").write_text('{"name": "dep", "version": "1.0.0", "main": "index.js"}')
    (dep / "index.js").write_text("module.exports = 7;\n")
    (project / "package.json").write_text(
        '{"name": "app", "version": "1.0.0", "dependencies": {"dep": "file:dep"}}'
    )
    ws, _ = workspace(project, home)
    code, out = await run(
        ws, "npm install --offline --no-audit --no-fund && node -e 'console.log(require(\"dep\"))'", home
    )
    assert code == 0 and out.rstrip().endswith("7"), out


def test_refusals_are_told_apart_from_ordinary_failures(project: Path, home: Path) -> None:
    _, sandbox = workspace(project, home, network=False)
    assert sandbox.explain_refusal("mkdir: cannot create directory '/etc/x': Read-only file system")
    assert sandbox.explain_refusal("curl: (6) Could not resolve host: example.com")
    assert sandbox.explain_refusal(f"cat: {home / '.ssh' / 'id_rsa'}: No such file or directory")
    assert sandbox.explain_refusal("FAILED tests/test_x.py::test_y - assert 1 == 2") is None
    assert sandbox.explain_refusal(f"cat: {project / 'missing'}: No such file or directory") is None
    _, online = workspace(project, home, network=True)
    assert online.explain_refusal("curl: (7) Failed to connect: Connection refused") is None


async def test_with_the_network_off_its_own_loopback_still_works(project: Path, home: Path) -> None:
    ws, _ = workspace(project, home, network=False)
    serve_and_connect = (
        f"{sys.executable} -c \"import socket; s = socket.create_server(('127.0.0.1', 0)); "
        "c = socket.create_connection(s.getsockname(), 5); a, _ = s.accept(); c.sendall(b'ping'); "
        'print(a.recv(4).decode())"'
    )
    code, out = await run(ws, serve_and_connect, home)
    assert code == 0 and out.strip() == "ping", out
    code, out = await run(
        ws, f"{sys.executable} -c \"import socket; socket.create_connection(('1.1.1.1', 53), 5)\"", home
    )
    assert code != 0 and "Network is unreachable" in out


async def test_settings_choose_the_writable_caches_and_the_network(
    project: Path, home: Path, tmp_path: Path
) -> None:
    from hermes_core.config import load_settings

    (home / "toolstore").mkdir()
    environ = {
        "HERMES_ACP_HOME": str(tmp_path / "agent-home"),
        "HERMES_ACP_SANDBOX_WRITABLE": "~/toolstore, ~/not-there",
        "HERMES_ACP_SANDBOX_CACHES": "~/.npm",
        "HERMES_ACP_SANDBOX_NETWORK": "off",
        "HERMES_ACP_DEFAULT_MODE": "auto",
    }
    settings = load_settings(environ)
    assert settings.sandbox_writable == ["~/toolstore", "~/not-there"] and settings.default_mode == "auto"
    scope = WorkspaceScope(project)
    sandbox = Sandbox.from_settings(settings, scope)
    sandbox.home = home
    assert not sandbox.network
    ws = LocalWorkspace(scope, sandbox=sandbox)
    code, out = await run(
        ws, "echo kept > ~/toolstore/x && echo private > ~/.npm/z && echo no > ~/.cache/y", home
    )
    assert "Read-only file system" in out
    assert (home / "toolstore" / "x").read_text() == "kept\n"  # writable: the user's choice
    assert not (home / ".npm" / "z").exists()  # a cache: private to the sandbox
    assert code != 0 and not (home / ".cache" / "y").exists()  # replaced, not added to, the defaults


async def test_a_sandboxed_commands_output_is_whole_when_it_ends(project: Path, home: Path) -> None:
    """The command counts as finished when bwrap exits, before bwrap's pid 1 lets go of the
    pipe: what the command wrote last (after more than a pipe holds, on stderr, not ASCII)
    is all there, with its exit code."""
    ws, _ = workspace(project, home)
    lines = 20_000  # ~300 KB: more than a pipe holds, so the command waits on the reader
    last_words = "printf 'last words: d\\303\\251j\\303\\240 vu' >&2"  # déjà vu, in octal escapes
    code, out = await run(ws, f"seq 1 {lines} | sed 's/$/ line of output/'; {last_words}; exit 3", home)
    assert code == 3
    assert out.endswith("last words: déjà vu")
    assert f"\n{lines} line of output\n" in out


async def test_the_agents_own_install_in_a_temp_dir_runs_read_only_inside(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Commands get the shared temp dirs empty. The agent's own installation may live there (a
    # CI clone, a venv made under /tmp): its interpreter must still run inside (hooks, the
    # user's tests), read-only as everywhere else.
    install = tmp_path / "install"
    (install / "bin").mkdir(parents=True)
    tool = install / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho from-the-install\n")
    tool.chmod(0o755)
    monkeypatch.setattr("hermes_core.sandbox.protected.own_code", lambda: [install])
    ws, _ = workspace(project, home)
    code, output = await run(ws, f"{tool} && touch {install}/planted", home)
    assert "from-the-install" in output, output
    assert code != 0 and not (install / "planted").exists()
