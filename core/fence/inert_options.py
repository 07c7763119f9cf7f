"""When a program that runs nothing of the workspace's still does what no word of the
command shows, so an "always" for it outside the sandbox must not stretch to a later run:
`curl -K fetch.cfg` reads more options from a file of the workspace (`output =
/home/u/.bashrc`, `upload-file = ~/.ssh/id_rsa`), `cp -r staging/. .` writes whatever
the tree holds by then (a `.vscode/tasks.json`, a `.husky/pre-commit`), `wget URL` writes
a file named by the server's URL (`%2Evscode/tasks.json` with `-x`), `curl
file://localhost/home/u/.aws/credentials` reads a file no word names as a path, and `jq -n
env` or `ps eww` print the environment's tokens, which outside the sandbox are all there.
"""

from __future__ import annotations

import re
from pathlib import Path

from hermes_core.shell.programs import Invocation


def steered_beyond_its_words(inv: Invocation, cwd: Path | None = None) -> bool:
    """Whether this run of an inert program reads options from a file, copies a tree, or
    reads, writes or prints what its words do not name (`cwd`: where its words are read)."""
    return (
        _reads_options_from_a_file(inv)
        or _copies_a_tree(inv)
        or _curl_beyond_its_words(inv)
        or _wget_beyond_its_words(inv)
        or _prints_the_environment(inv)
        or _ip_runs_or_reads(inv)
        or _follows_links_while_walking(inv, cwd)
    )


def _copies_a_tree(inv: Invocation) -> bool:
    """`cp -r staging/. .`: what a recursive copy writes is what the tree holds by then
    (a `.vscode/tasks.json`, a `.husky/pre-commit`), which no word names."""
    if inv.program != "cp":
        return False
    for word in inv.words[1:]:
        text = word.text
        if _long(text, ("--recursive", "--archive")) or (
            text.startswith("-") and not text.startswith("--") and any(c in text for c in "rRa")
        ):
            return True
    return False


# Options that read more options from a file, wget's `-e` (one option) too: (short
# letter, long options); a short one counts anywhere in a group (`curl -sK ci.cfg`).
_OPTION_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "curl": ("K", ("--config",)),
    "wget": ("e", ("--config", "--execute")),
}


def _reads_options_from_a_file(inv: Invocation) -> bool:
    if inv.program not in _OPTION_FILES:
        return False
    letter, long_options = _OPTION_FILES[inv.program]
    for word in inv.words[1:]:
        text = word.text
        if _long(text, long_options):
            return True
        if text.startswith("-") and not text.startswith("--") and letter in text:
            return True
    return False


def _long(text: str, options: tuple[str, ...]) -> bool:
    """Whether `text` is one of the long `options`, or a prefix of one: curl, wget and GNU
    tools take any unambiguous prefix (`curl --conf x`, `cp --recur`)."""
    name = text.split("=", 1)[0]
    return text.startswith("--") and len(name) > 3 and any(option.startswith(name) for option in options)


def _has_short(text: str, letters: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and any(c in text[1:] for c in letters)


# A URL that is not http(s): `file:`, `FILE:`, `scp://`, `{f}ile:` (curl expands `{…}` and
# `[…]` in URLs before it reads the scheme), or a scheme curl is told to assume.
_WEB_URL = re.compile(r"(?i)https?://[^{}\[\]]*")
_SCHEME = re.compile(r"(?i)^[^=/\s]*:/|file:")
# curl's options that name what it writes or prints beyond its words: the server's name for
# the file (`-J`), a protocol to assume for a bare name, `%output{…}` in a write-out format
# (it writes the response's headers to that file), environment variables (`--variable
# %GITHUB_TOKEN`, sent by `--expand-url`).
_CURL_STEERING = ("--remote-header-name", "--proto-default", "--variable", "--proto", "--proto-redir")


def _curl_beyond_its_words(inv: Invocation) -> bool:
    if inv.program != "curl":
        return False
    for word in inv.words[1:]:
        text = word.text
        if _long(text, _CURL_STEERING):
            return True
        if _has_short(text, "J"):
            return True
        if "%output{" in text:
            return True
        if not text.startswith("-") and _SCHEME.search(text) and not _WEB_URL.fullmatch(text):
            return True
    return False


# wget writes what the server's URLs name unless told one file (`-O`); these make it write
# more (recursion, `-x`'s folders, the server's names) or run a program (`--use-askpass`).
_WGET_MORE = (
    "--recursive",
    "--mirror",
    "--page-requisites",
    "--force-directories",
    "--content-disposition",
    "--trust-server-names",
    "--input-file",
    "--base",
    "--use-askpass",
    "--backups",
)


def _wget_beyond_its_words(inv: Invocation) -> bool:
    if inv.program != "wget":
        return False
    named_output = False
    for word in inv.words[1:]:
        text = word.text
        if _long(text, _WGET_MORE):
            return True
        if _has_short(text, "rmpxiB"):
            return True
        if _long(text, ("--output-document",)) or _has_short(text, "O"):
            named_output = True
    return not named_output


def _prints_the_environment(inv: Invocation) -> bool:
    """`jq -n env`, `jq -n '$ENV'`, `ps eww`, `export -p`: outside the sandbox the
    environment holds every token the sandbox drops."""
    words = [w.text for w in inv.words[1:]]
    if inv.program == "jq":
        return any(re.search(r"\benv\b|\$ENV|\$__prog", t) for t in words)
    if inv.program == "ps":
        # BSD-style `e` (`ps eww`, `ps axe`) adds each process's environment; a format list
        # holding an `e` asks too (fail closed: `-o user` is rare under an "always").
        return any(not t.startswith("-") and "e" in t for t in words)
    if inv.program == "export":
        return not words or any(t.startswith("-") for t in words)
    return False


# `ip` subcommands' verbs that change the host rather than show it (as root, outside the
# sandbox: `ip link set lo down`, `ip route flush all`).
_IP_CHANGES = frozenset(
    {"add", "del", "delete", "set", "flush", "change", "replace", "append", "prepend", "attach"}
)


def _ip_runs_or_reads(inv: Invocation) -> bool:
    """`ip netns exec NS cmd` runs a command; `ip -batch FILE` reads its commands from a
    file; `ip link set …` changes the host. So do `date -s`, `hostname NAME`, `ss -K`: an
    "always" given to show covers only showing."""
    words = [w.text for w in inv.words[1:]]
    if inv.program == "ip":
        return "exec" in words or any(
            t.lstrip("-") in ("b", "batch", "force") or t in _IP_CHANGES for t in words
        )
    if inv.program == "date":
        return any(_long(t, ("--set", "--file")) or _has_short(t, "sf") for t in words)
    if inv.program == "hostname":
        return any(not t.startswith("-") or _long(t, ("--file",)) or _has_short(t, "F") for t in words)
    if inv.program == "ss":
        return any(_long(t, ("--kill",)) or _has_short(t, "K") for t in words)
    return False


def _follows_links_while_walking(inv: Invocation, cwd: Path | None) -> bool:
    """`grep -R KEY .` and `diff -r a b` follow every link they meet while walking, one the
    sandbox planted (`sub -> ~/.ssh`) included, and print what they read; no word names it.
    So does `diff a b` of two folders, one level deep. (`grep -r` follows only the links its
    words name, which are checked.)"""
    words = [w.text for w in inv.words[1:]]
    if inv.program in ("grep", "egrep", "fgrep"):
        return any(_long(t, ("--dereference-recursive",)) or _has_short(t, "R") for t in words)
    if inv.program == "diff":
        if any(_long(t, ("--recursive",)) or _has_short(t, "r") for t in words):
            return True
        operands = [t for t in words if not t.startswith("-")]
        return cwd is None or any((cwd / t).is_dir() for t in operands)
    return False
