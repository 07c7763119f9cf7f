"""The user's secrets: one list, used by the command sandbox (hidden from confined commands)
and by the file tools (`read_file`, `search` refuse them), inside a workspace root too.

Paths are relative to the home folder; `.env`-style files are matched by name anywhere.
`is_secret_path` answers for one resolved path; `home_secrets` lists what exists so the
sandbox can hide it.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import time
from pathlib import Path

from hermes_core.sandbox import listing
from hermes_core.sandbox.relocated_secrets import RELOCATING, relocated_secrets
from hermes_core.sandbox.ssh_agents import named_agents

# Directories whose whole content is credentials (or keys, tokens, agent sockets).
SECRET_DIRS: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".azure",
    ".oci",
    ".kube",
    ".docker",
    ".password-store",  # pass
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/github-copilot",
    ".config/rclone",
    ".config/op",  # 1Password CLI
    ".config/1Password",
    ".op",
    ".config/doctl",
    ".config/sops",
    ".local/share/keyrings",  # GNOME keyring
    ".terraform.d",  # credentials.tfrc.json and plugin caches
    ".mozilla",  # browser profiles: cookies, saved passwords
    ".config/google-chrome",
    ".config/chromium",
    # What lets a process run code in one of the user's programs outside the sandbox: a
    # Jupyter kernel's connection file (its port and signing key) and server tokens, emacs's
    # server key.
    ".local/share/jupyter/runtime",
    ".ipython/profile_default/security",
    ".emacs.d/server",
    ".local/share/wezterm",  # its mux socket: `wezterm cli spawn` runs a command as the user
    ".config/emacs/server",
    ".config/containers",  # podman's registry logins (auth.json)
    ".config/glab-cli",
    ".config/configstore",  # npm tools' logins (firebase, snyk, vercel...)
    ".fly",
    ".kaggle",
    ".local/share/atuin",  # shell history (with its sync key), like the histories below
    ".config/.wrangler",  # Cloudflare's login
    ".local/share/com.vercel.cli",
    ".config/netlify",
    ".config/stripe",
    ".config/hcloud",
    # Container engines' VMs in the home: their docker sockets (`docker run -v ~:/h` runs
    # anything outside) and lima's ssh key to the VM.
    ".rd",  # Rancher Desktop
    ".colima",
    ".lima",
    # Other browsers' profiles (cookies, saved passwords; without a keyring Chromium's are
    # encrypted with a fixed key), and chat apps' logged-in sessions: a Discord token, a
    # Telegram session or Slack's cookie is the account.
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    ".config/discord",
    ".config/Slack",
    ".config/Signal",
    ".config/Element",
    ".local/share/TelegramDesktop",
    # Saved logins of file-transfer, remote-desktop and chat clients (passwords in plain text
    # or base64), and VS Code's extensions' stored state (their tokens).
    ".config/filezilla",
    ".config/remmina",
    ".local/share/remmina",
    ".purple",
    ".config/Code/User/globalStorage",
    # git's credential cache daemon: its socket answers `git credential-cache get` with the
    # password of your last push over HTTPS.
    ".git-credential-cache",
    ".cache/git/credential",
    # 1Password's ssh agent (`IdentityAgent ~/.1password/agent.sock` in ~/.ssh/config, with no
    # SSH_AUTH_SOCK to hide): through it a command signs with your keys.
    ".1password",
)
# Single files holding credentials, and shell and REPL histories (pasted tokens).
SECRET_FILES: tuple[str, ...] = (
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".yarnrc.yml",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".cache/huggingface/token",
    ".huggingface/token",
    ".config/huggingface/token",
    ".vault-token",
    ".terraformrc",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".s3cfg",
    ".boto",
    ".Xauthority",  # X11's cookie: with X11's abstract socket, keystrokes into your terminal
    ".ICEauthority",
    ".databrickscfg",
    # Database and mail clients' passwords.
    ".my.cnf",
    ".mylogin.cnf",
    ".msmtprc",
    ".config/msmtp/config",
    ".mbsyncrc",
    ".config/isync/mbsyncrc",
    ".offlineimaprc",
    ".fetchmailrc",
    ".config/aerc/accounts.conf",
    ".wgetrc",  # `password = …`, `http_password = …`
    # Bitwarden's ssh agent socket (the desktop app's, and its Flatpak's).
    ".bitwarden-ssh-agent.sock",
    ".var/app/com.bitwarden.desktop/data/.bitwarden-ssh-agent.sock",
    # Other coding agents' model credentials: an OpenAI key or ChatGPT login (Codex), Claude's
    # OAuth tokens and API key, Gemini's login, opencode's and `llm`'s keys, aider's and
    # Continue's configs (where their users keep `api-key`s).
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".gemini/oauth_creds.json",
    ".local/share/opencode/auth.json",
    ".config/io.datasette.llm/keys.json",
    ".aider.conf.yml",
    ".continue/config.json",
    ".continue/config.yaml",
    # Package registries' logins beside `.npmrc` and `.pypirc`.
    ".config/pypoetry/auth.toml",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".cache/huggingface/stored_tokens",
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".history",
    ".sh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
    ".lesshst",
    ".viminfo",
    ".local/share/fish/fish_history",
)
# `.env`, `.envrc`, `.env.local`, `.env-local`, `.env_prod`...: by name, anywhere. The
# committed templates (`.env.example`, `.sample`, `.template`, `.dist`) stay readable:
# they document which variables exist and hold no values by convention.
_ENV_FILE = re.compile(r"\.env(rc)?([._-].*)?")
_ENV_TEMPLATE = re.compile(r".*[._-](example|sample|template|dist|defaults)", re.IGNORECASE)


def is_env_file(name: str) -> bool:
    """Whether a file name is a dotenv-style secrets file."""
    return bool(_ENV_FILE.fullmatch(name)) and not _ENV_TEMPLATE.fullmatch(name)


def is_secret_path(path: Path, *, home: Path | None = None, extra: tuple[Path, ...] = ()) -> bool:
    """Whether a resolved path is one of the user's secrets or lies inside one: the lists
    above under `home` (default: the user's), a dotenv-style file name anywhere,
    or inside one of `extra` (the agent's own home). Cheap enough per file of a search:
    one set lookup per component of the path."""
    text = str(path)
    if is_env_file(
        text[text.rfind("/") + 1 :]
    ):  # a file's name: `python -m venv .env` makes a folder of that name
        return True
    secrets = (
        _secret_strings(home, extra)
        if home is not None
        else _own_secret_strings(os.environ.get("HOME"), extra)
    )
    # The path and each folder above it, as strings: pathlib's `parents` cost most of a
    # read_file's time here.
    while True:
        if text in secrets:
            return True
        cut = text.rfind("/")
        if cut <= 0:
            return cut == 0 and text != "/" and "/" in secrets
        text = text[:cut]


def relocated() -> tuple[Path, ...]:
    """The secrets this process's environment moved elsewhere (`GNUPGHOME`, `CARGO_HOME`,
    `XDG_CONFIG_HOME`...): hidden like the home's. Callers that ask per file (a session's
    scope) keep the answer; the variables' values key the cache."""
    return _relocated(tuple(os.environ.get(name, "") for name in RELOCATING))


@functools.lru_cache(maxsize=8)
def _relocated(values: tuple[str, ...]) -> tuple[Path, ...]:
    return relocated_secrets(dict(zip(RELOCATING, values, strict=True)), (*SECRET_DIRS, *SECRET_FILES))


@functools.lru_cache(maxsize=16)
def _own_secret_strings(_home_variable: str | None, extra: tuple[Path, ...]) -> frozenset[str]:
    """The user's own list (`Path.home()`, which the variable keys: it moves with it)."""
    return _secret_strings(Path.home(), extra)


@functools.lru_cache(maxsize=16)
def _secret_strings(home: Path, extra: tuple[Path, ...]) -> frozenset[str]:
    return frozenset(map(str, _secret_set(home, extra)))


@functools.lru_cache(maxsize=16)
def _secret_set(home: Path, extra: tuple[Path, ...]) -> frozenset[Path]:
    """Every secret location by its name and, when it is a link, by its target."""
    out: set[Path] = set()
    for base in {home, home.resolve()}:
        for relative in (*SECRET_DIRS, *SECRET_FILES):
            out.add(base / relative)
    for path in (*list(out), *extra):
        out.add(path)
        try:
            out.add(path.resolve())
        except (OSError, RuntimeError):
            continue
    return frozenset(out)


def home_secrets(home: Path) -> tuple[list[Path], list[Path]]:
    """The secret directories and files that exist under `home` (a link is hidden where
    its target is: a mount follows it)."""
    # A folder's name may be a file instead: hub keeps its `oauth_token` in a file named
    # `~/.config/hub`, which the folders' listing alone left readable.
    files = existing(home, SECRET_FILES, want_dir=False) + existing(home, SECRET_DIRS, want_dir=False)
    files += [agent for agent in named_agents(home) if os.path.lexists(agent)]
    return existing(home, SECRET_DIRS, want_dir=True), files


def existing(base: Path, relatives: tuple[str, ...], *, want_dir: bool | None) -> list[Path]:
    """Which of `base/relative` exist (of the kind asked for). Not resolved: a mount
    follows a link to its target.

    This runs before every sandboxed command, over some hundred names: the answer is kept
    while the change times of every folder on the way to them stay put (an entry added,
    removed, renamed or swapped for a link anywhere on the way moves one), a stat per
    folder instead of one per name. An answer in which a name is a link is never kept: a
    link's target can appear or vanish without any of those folders changing. One scan
    serves both kinds (the secret folders' names are asked for as files too)."""
    key = (str(base), relatives)
    return [path for path, is_dir in _kinds(key) if want_dir is None or is_dir == want_dir]


def _kinds(key: tuple[str, tuple[str, ...]]) -> _Found:
    """(path, is a folder) of each of the names that exists (`existing`)."""
    paths, folders = _layout(key)
    stamps = _stamps(folders)
    cached = _existing.get(key)
    if cached is not None and cached[0] == stamps and listing.settled(stamps, cached[1]):
        return cached[2]
    scanned_at = time.time_ns()
    out: list[tuple[Path, bool]] = []
    links = False
    for path in paths:
        try:
            status = os.lstat(path)
            if stat.S_ISLNK(status.st_mode):
                links = True
                status = os.stat(path)
        except (OSError, ValueError):
            continue
        out.append((Path(path), stat.S_ISDIR(status.st_mode)))
    found = tuple(out)
    if links:
        _existing.pop(key, None)
    else:
        _existing[key] = (stamps, scanned_at, found)
    return found


def _stamps(folders: tuple[str, ...]) -> tuple[int | None, ...]:
    """Each folder's change time, None where it is not there. A folder inside one that is
    not there is not looked at: it cannot appear without its parent appearing first, which
    moves the parent's stamp (from None), so the answer is not kept then either. (`folders`
    is sorted: a parent comes before what it holds.)"""
    gone: set[str] = set()
    stamps: list[int | None] = []
    for folder in folders:
        if os.path.dirname(folder) in gone:
            gone.add(folder)
            stamps.append(None)
            continue
        stamp = listing.changed(folder)
        if stamp is None:
            gone.add(folder)
        stamps.append(stamp)
    return tuple(stamps)


_Found = tuple[tuple[Path, bool], ...]
_existing: dict[tuple[str, tuple[str, ...]], tuple[tuple[int | None, ...], int, _Found]] = {}
_layouts: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _layout(key: tuple[str, tuple[str, ...]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names joined to their base, and every folder from the root down to each one's
    parent: a change in any of those folders (a link swapped in for `~/.config`, say) can
    change what the names lead to. Worked out once per list: only strings."""
    layout = _layouts.get(key)
    if layout is None:
        prefix, relatives = key
        paths = tuple(os.path.join(prefix, relative) for relative in relatives)
        found: set[str] = set()
        for path in paths:
            parent = os.path.dirname(os.path.normpath(path))
            while parent not in found:
                found.add(parent)
                parent = os.path.dirname(parent)
        layout = _layouts[key] = (paths, tuple(sorted(found)))
    return layout
