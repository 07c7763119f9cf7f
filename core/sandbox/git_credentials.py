"""Git config files as a confined command reads them: without the credentials they hold.

A remote URL often carries a token (`url = https://x-access-token:ghp_…@github.com/o/r`,
`https://user:pass@host`), CI checkouts keep one as an `extraheader = AUTHORIZATION: basic
…`, and `~/.gitconfig` may hold one in an `insteadOf` URL. Git must read its config to work,
so the file cannot be hidden like `~/.git-credentials`: the sandbox binds a copy with the
user part of every URL and every `extraheader` line taken out over it instead. `read_file` and `search`
show the model these files the same way. Git in the
sandbox then works as before, except that it cannot authenticate with them (a push asks to
run outside the sandbox anyway).

The copies live in a folder of this process's own (0700) in the temp dir, which the sandbox
sees empty; each is named by its content's hash, so sessions share them.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from hermes_core.fence.gitignore import read_regular
from hermes_core.sandbox.file_memo import read_through
from hermes_core.sandbox.own_folders import own_folder

MAX_CONFIG_BYTES = 1 << 20  # a larger config is not copied: its credentials stay (rare)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s\"'@]+@")
_EXTRAHEADER = re.compile(r"(?im)^[ \t]*extraheader[ \t]*=.*$")
# Keys whose value is a secret by their name: `sendemail.smtpPass`, `github.token`,
# `hub.oauthtoken`, `gitlab.token`, a tool's `apiSecret`.
_SECRET_KEY = re.compile(r"(?im)^([ \t]*[a-z0-9-]*(?:pass|passwd|password|token|secret)[ \t]*=).*$")
# Section names only git's config uses: a file with one reads as a git config whatever its
# name (a link to `.git/config` by another name, a file `include.path` names).
_GIT_SECTION = re.compile(r"(?im)^[ \t]*\[[ \t]*(remote|url|http|credential|includeIf|submodule)([ \t.]|\])")


def is_git_config(path: Path | str) -> bool:
    """Whether git reads `path` as configuration: a repository's `config` (a submodule's
    and worktree's too), `~/.gitconfig`, `~/.config/git/config`."""
    parts = Path(path).parts
    if not parts:
        return False
    name = parts[-1]
    if name == ".gitconfig":
        return True
    if name in ("config", "config.worktree") and ".git" in parts[:-1]:
        return True
    return parts[-3:] == (".config", "git", "config")


def redacted(text: str) -> str:
    """`text` with the user part of every URL, every `extraheader` value and every value
    of a key named for a secret (`smtpPass`, `token`) taken out."""
    text = _USERINFO.sub(r"\1", text)
    text = _SECRET_KEY.sub(r"\1 (hidden by the sandbox)", text)
    return _EXTRAHEADER.sub("\textraheader = (hidden by the sandbox)", text)


def shown(text: str, *places: Path | str | None) -> str:
    """`text` as the model may see it: `redacted` when one of `places` (the name as written,
    where it was opened) is a git config or the text itself reads as one. By content too,
    because a name can be swapped between the read and this check, and a workspace may
    commit a link (`AGENTS.md -> .git/config`) that its readers follow."""
    if any(place is not None and is_git_config(place) for place in places) or _GIT_SECTION.search(text):
        return redacted(text)
    return text


def redacted_copy(config: Path) -> Path | None:
    """A read-only copy of `config` without its credentials, or None when it holds none
    (or cannot be read: then there is nothing to copy either). The file is read and
    redacted again only when it changed (`file_memo`): every launch asks."""
    encoded = read_through(str(config), _redacted_bytes)
    if encoded is None:
        return None
    copy = own_folder("hermes-gitconfig-") / hashlib.sha256(encoded).hexdigest()[:32]
    if not copy.exists():
        fd, temporary = tempfile.mkstemp(dir=copy.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(encoded)
        os.chmod(temporary, 0o400)
        os.replace(temporary, copy)
    return copy


def _redacted_bytes(config: str) -> bytes | None:
    """The config's text without its credentials; None when it holds none."""
    data = read_regular(config, MAX_CONFIG_BYTES + 1)  # a FIFO must not block
    if data is None or len(data) > MAX_CONFIG_BYTES:
        return None
    text = data.decode("utf-8", errors="surrogateescape")
    clean = redacted(text)
    if clean == text:
        return None
    return clean.encode("utf-8", errors="surrogateescape")
