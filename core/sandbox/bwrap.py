"""Confining one session's commands in the kernel: a command plus the session's roots
becomes a bubblewrap (`bwrap`) launch that may write only inside the workspace, a private temp
dir and the toolchains' caches, cannot read the user's secrets, and optionally has no
network; its environment loses the agent's own credentials.

Whether bwrap starts here is `core.sandbox.probe`'s question, asked when a `Sandbox` is made
(never during a turn); where it cannot start, `confinement` is "unavailable" and the
approval policy asks before every command instead.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from core.sandbox.probe import BASE_ARGS, Availability, bundled_bwrap, probe

if TYPE_CHECKING:
    from core.config import Settings
    from core.workspace import WorkspaceScope

SandboxMode = Literal["workspace-write", "read-only", "off"]
Confinement = Literal["sandboxed", "off", "unavailable"]

# Toolchain caches and stores that stay writable by default (bound only when they exist).
# Not ~/.rustup, ~/.cargo/bin, ~/.gradle/init.d or ~/.m2/settings.xml: a command that could
# rewrite a toolchain or a build's init scripts would run code unconfined the next time the
# user builds outside the sandbox.
DEFAULT_WRITABLE: tuple[str, ...] = (
    "~/.cache",  # pip, go build, uv, pre-commit, deno, ...
    "~/.npm",
    "~/.yarn",
    "~/.local/share/pnpm",
    "~/.bun/install/cache",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/go/pkg/mod",
    "~/.m2/repository",
    "~/.gradle/caches",
    "~/.gradle/wrapper",
    "~/.gradle/daemon",
    "~/.nuget/packages",
)

# The user's credentials: hidden (an empty read-only dir, or /dev/null for a file).
SECRET_DIRS: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.config/gh",
    "~/.password-store",
)
SECRET_FILES: tuple[str, ...] = ("~/.netrc", "~/.pgpass", "~/.git-credentials", "~/.pypirc")
# Sockets that hand out root on the host: reachable through a read-only bind otherwise.
HOST_SOCKETS: tuple[str, ...] = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    # systemd's bus: a command running as root could stop services or reboot through it.
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
)
# The agent's own model credentials (and their pools, `OPENAI_API_KEY_2`), and the AWS keys
# Bedrock reads: hidden from confined commands like the files under ~/.aws.
CREDENTIAL_ENV = re.compile(
    r"HERMES_ACP_\w*KEY\w*|(OPENAI|ANTHROPIC|OPENROUTER)_API_KEY(_\d+)?|"
    r"AWS_(SECRET_ACCESS_KEY|SESSION_TOKEN|ACCESS_KEY_ID)"
)
CREDENTIAL_NAMES: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "HERMES_ACP_API_KEY",
    "HERMES_ACP_OPENAI_API_KEY",
    "HERMES_ACP_ANTHROPIC_API_KEY",
    "HERMES_ACP_OPENROUTER_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ACCESS_KEY_ID",
)
_ENV_FILE = re.compile(r"^\.env(\..+)?$")


class Sandbox:
    """The confinement of one session's commands."""

    def __init__(
        self,
        scope: WorkspaceScope,
        *,
        mode: SandboxMode = "workspace-write",
        network: bool = True,
        writable: tuple[str, ...] = DEFAULT_WRITABLE,
        hidden: tuple[Path, ...] = (),  # besides the secrets: the agent's own home
        hidden_env: frozenset[str] = frozenset(),  # besides CREDENTIAL_ENV: fallbacks' key variables
        bwrap: str | None = None,
        home: Path | None = None,
    ) -> None:
        self.scope = scope
        self.mode: SandboxMode = mode
        self.network = network
        self.writable = writable
        self.hidden = hidden
        self.hidden_env = hidden_env
        self.bwrap = bwrap if bwrap is not None else bundled_bwrap()
        self.home = (home if home is not None else Path.home()).resolve()
        self._tmp: Path | None = None
        # What the first turn tells the user when the sandbox cannot start; the turn clears
        # it once said. Worked out here (probing bwrap once per process) so that a turn reads
        # a field instead of probing: a turn without commands runs no sandbox code.
        self.notice: str | None = None
        if self.confinement == "unavailable":
            self.notice = (
                f"The command sandbox cannot start ({self.availability.reason}). "
                "Every command will ask for approval before it runs, in every mode."
            )

    @classmethod
    def from_settings(cls, settings: Settings, scope: WorkspaceScope) -> Sandbox:
        return cls(
            scope,
            mode=settings.sandbox,
            network=settings.sandbox_network == "on",
            writable=tuple(settings.sandbox_writable),
            hidden=(settings.home,),
            hidden_env=frozenset(e.api_key_env for e in settings.fallback if e.api_key_env),
            bwrap=settings.sandbox_bwrap,
        )

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """The environment a confined command sees: without the model credentials the
        agent itself reads. A command the model wrote could otherwise send them anywhere
        while the network is on, without anyone being asked."""
        return {name: value for name, value in env.items() if not self._hides_variable(name)}

    def _hides_variable(self, name: str) -> bool:
        if CREDENTIAL_ENV.fullmatch(name):
            return True
        base, _, number = name.rpartition("_")
        return name in self.hidden_env or (number.isdigit() and base in self.hidden_env)

    # -- state -----------------------------------------------------------------------

    @property
    def availability(self) -> Availability:
        return probe(self.bwrap)

    @property
    def confinement(self) -> Confinement:
        if self.mode == "off":
            return "off"
        return "sandboxed" if self.availability.ok else "unavailable"

    def describe(self) -> str:
        """One line for --check and the approval card."""
        if self.mode == "off":
            return 'off (sandbox = "off"): commands run unconfined'
        availability = self.availability
        if not availability.ok:
            return f"cannot start: {availability.reason}. Every command will ask before it runs unconfined"
        where = "the workspace" if self.mode == "workspace-write" else "nothing but a private temp dir"
        net = "network on" if self.network else "network off"
        return f"{self.mode}: commands may write to {where}; secrets hidden; {net} ({availability.reason})"

    @property
    def temp_dir(self) -> Path:
        """The session's private temp dir (TMPDIR inside the sandbox), removed with it."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="hermes-acp-tmp-")).resolve()
            weakref.finalize(self, shutil.rmtree, str(self._tmp), True)
        return self._tmp

    # -- the launch ------------------------------------------------------------------

    def wrap(self, argv: list[str], *, cwd: Path, new_session: bool = False) -> list[str]:
        """`argv` as a confined launch (bwrap and its arguments first). Call only when
        `confinement == "sandboxed"`."""
        assert self.bwrap is not None
        args: list[str] = [self.bwrap, *BASE_ARGS]
        if not self.network:
            args.append("--unshare-net")  # its own network namespace: loopback only, and up
        if new_session:
            # An editor terminal may be a tty: a new session stops TIOCSTI keystroke injection.
            args.append("--new-session")
        roots = self.scope.roots
        writable: list[Path] = []
        if self.mode == "workspace-write":
            writable += roots
            writable += self._existing_writable()
        tmp = self.temp_dir
        writable.append(tmp)
        for path in _outermost(writable):
            args += ["--bind", str(path), str(path)]
        for path in self._hidden_dirs(roots):
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        for path in self._hidden_files(roots):
            args += ["--ro-bind", "/dev/null", str(path)]
        # An editor's terminal starts from the editor's environment, which the agent never
        # sees: bwrap drops the credentials there (a local command's are dropped beforehand).
        for name in (*CREDENTIAL_NAMES, *sorted(self.hidden_env)):
            args += ["--unsetenv", name]
        args += ["--setenv", "TMPDIR", str(tmp), "--chdir", str(cwd), "--", *argv]
        return args

    def _existing_writable(self) -> list[Path]:
        out = []
        for raw in self.writable:
            path = self.home / raw[2:] if raw.startswith("~/") else Path(raw)
            try:
                resolved = path.resolve(strict=True)
            except (OSError, RuntimeError):
                continue
            if resolved.is_dir() and not self._is_secret(resolved):
                out.append(resolved)
        return out

    def _is_secret(self, path: Path) -> bool:
        return any(path == s or path.is_relative_to(s) for s in self._secret_dirs())

    def _secret_dirs(self) -> list[Path]:
        dirs = [self.home / raw[2:] for raw in SECRET_DIRS]
        return [*dirs, *self.hidden]

    def _hidden_dirs(self, roots: tuple[Path, ...]) -> list[Path]:
        out = []
        for raw in self._secret_dirs():
            try:
                path = raw.resolve(strict=True)
            except (OSError, RuntimeError):
                continue  # nothing there to hide (tmpfs needs an existing mount point)
            # Hiding a dir that holds the workspace would hide the workspace itself.
            if path.is_dir() and not any(root == path or root.is_relative_to(path) for root in roots):
                out.append(path)
        return out

    def _hidden_files(self, roots: tuple[Path, ...]) -> list[Path]:
        candidates = [self.home / raw[2:] for raw in SECRET_FILES]
        candidates += [Path(p) for p in HOST_SOCKETS]
        # `.env` files in the home and in the folders above each root: secrets the project
        # did not put in the workspace. Inside the workspace they stay readable.
        folders = {self.home}
        for root in roots:
            folders.update(root.parents)
        for folder in folders:
            try:
                with os.scandir(folder) as entries:
                    candidates += [Path(e.path) for e in entries if _ENV_FILE.match(e.name)]
            except OSError:
                continue
        out = []
        for path in candidates:
            if not os.path.lexists(path):
                continue
            resolved = path.resolve()
            if resolved.is_dir() or any(resolved.is_relative_to(root) for root in roots):
                continue
            out.append(resolved)
        return sorted(set(out))

    # -- after the fact --------------------------------------------------------------

    def explain_refusal(self, output: str) -> str | None:
        """Why the sandbox, not the command, is likely to blame for a failure, or None."""
        for line in output.splitlines():
            if "Read-only file system" in line:
                return f"it tried to write outside the sandbox's writable places ({line.strip()[:200]})"
        hidden = [str(p) for p in self._hidden_dirs(self.scope.roots)]
        for line in output.splitlines():
            if any(h in line for h in hidden) and _DENIED.search(line):
                return f"it touched a secret the sandbox hides ({line.strip()[:200]})"
        if not self.network:
            for line in output.splitlines():
                if _NETWORK_FAILURE.search(line):
                    return f"it needed the network, which is off in the sandbox ({line.strip()[:200]})"
        for line in output.splitlines():
            if _DENIED.search(line) and _outside_path(line, self):
                return f"it was refused access outside the workspace ({line.strip()[:200]})"
        return None


_DENIED = re.compile(
    r"Permission denied|Operation not permitted|No such file or directory|EACCES|EPERM|EROFS"
)
_NETWORK_FAILURE = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Could not resolve host|"
    r"Name or service not known|Connection refused|ENETUNREACH|EAI_AGAIN|ECONNREFUSED|"
    r"Failed to establish a new connection|getaddrinfo"
)
_PATH = re.compile(r"(?<![\w.])(/[^\s'\"`:,;)]+)")


def _outside_path(line: str, sandbox: Sandbox) -> bool:
    """Whether a permission error names an absolute path outside the writable places."""
    if not re.search(r"Permission denied|Operation not permitted|EACCES|EPERM", line):
        return False
    writable = [*sandbox.scope.roots, sandbox.temp_dir, *sandbox._existing_writable()]
    for match in _PATH.finditer(line):
        path = Path(match.group(1))
        if not any(path == w or path.is_relative_to(w) for w in writable):
            return True
    return False


def _outermost(paths: list[Path]) -> list[Path]:
    """Drop paths inside another one of the list: binding the outer one covers them."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    out: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(o) for o in out):
            out.append(path)
    return out


def check_line(settings: Settings) -> tuple[bool | None, str, str]:
    """--check's line about the sandbox: (ok; None when turned off), label, detail."""
    from core.workspace import WorkspaceScope

    sandbox = Sandbox.from_settings(settings, WorkspaceScope(Path.cwd()))
    ok = {"sandboxed": True, "off": None, "unavailable": False}[sandbox.confinement]
    return ok, "sandbox", sandbox.describe()
