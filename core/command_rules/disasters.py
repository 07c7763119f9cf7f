"""Known disasters: `rm -rf /`, `mkfs`, writes to disks, force pushes, `sudo`, shutdown.

One table (`RULES`) of a description the user sees and a test on one invocation; the
first rule that matches names the danger. `hermes_core.command_rules.check` applies it to every
program a command may run, before the fail-closed rules.
"""

from __future__ import annotations

import posixpath
import re

from hermes_core.command_rules.operands import rm_flags
from hermes_core.command_rules.words import (
    HARMLESS_DEVICES,
    Roots,
    Rule,
    find_starts,
    names,
    short_flags,
    split_options,
    subcommand_at,
)
from hermes_core.shell.parse import parse_or_empty
from hermes_core.shell.programs import EXEC_ACTIONS, Invocation, all_invocations, interpreter_family
from hermes_core.shell.tokens import Word

_SYSTEM_DIRS = names(
    "/bin /boot /dev /etc /home /lib /lib32 /lib64 /libx32 /media /mnt /opt /proc /root /run /sbin "
    "/snap /srv /sys /tmp /usr /var /System /Library /Applications /Users /Volumes /private"
)
_HOMES = re.compile(r"~[\w.-]*|\$HOME|\$\{HOME\}|/(home|Users)/[^/]+")
_EMPTY_VAR_SLASH = re.compile(r"\$\{?\w+\}?/\*?")  # `$DIR/` is `/` when DIR is empty
DISK_DEVICE = re.compile(r"/dev/([shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/)")
SYSTEM_FILE = re.compile(r"/(etc|boot|usr|bin|sbin|lib|lib64|sys|proc/sys|System)(/|$)")
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
ELEVATORS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})


DOWNLOAD_RUN = "runs a downloaded script (curl … | sh)"
DISK_WRITE = "writes to a disk device (> /dev/sd…)"
SYSTEM_WRITE = "writes to a system path (/etc, /boot, /usr, …)"


def _normal_path(raw: str) -> str:
    """`/usr/` -> `/usr`, `/*` -> `/`, `~/` -> `~`, `./*` -> `.`, `src/..` -> `.`."""
    if not raw:
        return raw
    path = re.sub(r"^/+", "/", raw)
    while True:
        path = posixpath.normpath(path)
        if path.endswith(("/*", "/.*")):
            path = path[: path.rindex("/")] or "/"
            continue
        return path


def _broad_system_path(raw: str) -> bool:
    """The root, a home directory or a top-level system directory."""
    path = _normal_path(raw)
    return path == "/" or path in _SYSTEM_DIRS or bool(_HOMES.fullmatch(path))


def _broad_path(raw: str) -> bool:
    """A broad system path, or the whole working directory or its parents."""
    if _broad_system_path(raw) or _EMPTY_VAR_SLASH.fullmatch(raw):
        return True
    path = _normal_path(raw)
    return path in (".", "*", ".*") or bool(re.fullmatch(r"\.\.(/\.\.)*", path))


def _rm_broad(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in ("rm", "rimraf"):
        return False
    _, operands = split_options(inv.args)
    recursive = inv.program == "rimraf" or "r" in rm_flags(inv)
    return recursive and any(_broad_path(p) for p in operands)


def _rm_no_preserve_root(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "rm" and "no-preserve-root" in rm_flags(inv)


def _makes_filesystem(inv: Invocation, roots: Roots) -> bool:
    return inv.program.startswith("mkfs") or inv.program in ("mke2fs", "mkswap", "newfs")


def _partitions(inv: Invocation, roots: Roots) -> bool:
    return inv.program in ("fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted")


def _wipes(inv: Invocation, roots: Roots) -> bool:
    return inv.program in ("wipefs", "shred") and any(a.startswith("/dev/") for a in inv.args)


def _device(path: str) -> bool:
    return path.startswith("/dev/") and path not in HARMLESS_DEVICES and not path.startswith("/dev/fd/")


def _dd_to_device(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "dd" and any(a.startswith("of=") and _device(a[3:]) for a in inv.args)


def _tee_targets(inv: Invocation) -> list[str]:
    return split_options(inv.args)[1] if inv.program == "tee" else []


def _tee_to_disk(inv: Invocation, roots: Roots) -> bool:
    return any(DISK_DEVICE.match(t) for t in _tee_targets(inv))


def _tee_to_system(inv: Invocation, roots: Roots) -> bool:
    return any(SYSTEM_FILE.match(t) for t in _tee_targets(inv))


def _world_writable(mode: str) -> bool:
    for part in mode.split(","):
        if re.fullmatch(r"0*[0-7]{3,4}", part) and int(part[-1]) & 2:
            return True
        if re.fullmatch(r"[ugoa]*[ao][ugoa]*[+=][rwxXst]*w[rwxXst]*", part):
            return True
    return False


def _ownership_recursive(inv: Invocation) -> tuple[bool, list[str]]:
    """Whether a chmod/chown/chgrp is recursive, and its operands."""
    recursive = False
    operands: list[str] = []
    for text in inv.args:
        flags = short_flags(text)
        if text == "--recursive" or (flags and re.fullmatch(r"[RcfvHLP]+", flags) and "R" in flags):
            recursive = True
        elif not (text.startswith("--") or (flags and re.fullmatch(r"[RcfvHLP]+", flags))):
            operands.append(text)  # chmod modes like -w are operands, not options
    return recursive, operands


def _chmod_dangerous(inv: Invocation, roots: Roots) -> bool:
    if inv.program != "chmod":
        return False
    recursive, operands = _ownership_recursive(inv)
    if not operands:
        return False
    mode, targets = operands[0], operands[1:]
    open_to_all = _world_writable(mode)
    return (recursive and open_to_all) or (
        (recursive or open_to_all) and any(_broad_system_path(t) for t in targets)
    )


def _chown_dangerous(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in ("chown", "chgrp"):
        return False
    recursive, operands = _ownership_recursive(inv)
    return recursive and any(_broad_system_path(t) for t in operands[1:])


def _downloads(word: Word) -> bool:
    """Whether the word's substitutions fetch something from the network."""
    return any(
        inv.program in DOWNLOADERS for sub in word.subs for inv in all_invocations(parse_or_empty(sub))
    )


def _runs_download(inv: Invocation, roots: Roots) -> bool:
    """`bash <(curl …)`, `sh -c "$(curl …)"`, `eval "$(wget -O- …)"`, `$(curl …)`."""
    if _downloads(inv.words[0]):
        return True
    runs_code = interpreter_family(inv.program) is not None or inv.program in ("eval", "source", ".")
    return runs_code and any(_downloads(w) for w in inv.words[1:])


def _git_subcommand(inv: Invocation) -> tuple[str, list[str]]:
    if inv.program != "git":
        return "", []
    args = list(inv.args)
    i = subcommand_at("git", args)
    return (args[i], args[i + 1 :]) if i < len(args) else ("", [])


def _git_force_push(inv: Invocation, roots: Roots) -> bool:
    sub, rest = _git_subcommand(inv)
    if sub != "push":
        return False
    options, operands = split_options(rest)
    forced = any(
        o in ("--force", "--mirror")
        or (len(o) > 3 and "--force".startswith(o))
        or o.startswith("--force-with-lease")
        or ("f" in short_flags(o) and not o.startswith("-o"))
        for o in options
    )
    return forced or any(ref.startswith("+") for ref in operands[1:])


def _git_reset_hard(inv: Invocation, roots: Roots) -> bool:
    sub, rest = _git_subcommand(inv)
    return sub == "reset" and any(len(o) > 3 and "--hard".startswith(o) for o in rest)


def _git_clean_dirs(inv: Invocation, roots: Roots) -> bool:
    sub, rest = _git_subcommand(inv)
    if sub != "clean":
        return False
    letters = set("".join(short_flags(o) for o in rest))
    letters |= {"f" for o in rest if len(o) > 3 and "--force".startswith(o)}
    letters |= {"n" for o in rest if len(o) > 3 and "--dry-run".startswith(o)}
    return "f" in letters and "n" not in letters and bool(letters & {"d", "x", "X"})


def _elevates(inv: Invocation, roots: Roots) -> bool:
    return inv.program in ELEVATORS


def _powers_off(inv: Invocation, roots: Roots) -> bool:
    if inv.program in ("shutdown", "reboot", "halt", "poweroff"):
        return True
    first = split_options(inv.args)[1][:1]
    if inv.program == "systemctl":
        return first in (["poweroff"], ["reboot"], ["halt"], ["kexec"])
    return inv.program in ("init", "telinit") and first in (["0"], ["6"])


def _kills_everything(inv: Invocation, roots: Roots) -> bool:
    if inv.program != "kill":
        return False
    args = list(inv.args)
    if args and args[0] in ("-l", "-L", "--list"):
        return False
    if args and args[0] in ("-s", "-n", "--signal"):
        args = args[2:]
    elif args and args[0].startswith("-") and args[0] != "--":
        args = args[1:]  # the first dash word is the signal: `kill -9 -1`
    if args[:1] == ["--"]:
        args = args[1:]
    return "-1" in args


def _kills_by_name(inv: Invocation, roots: Roots) -> bool:
    return inv.program in ("killall", "pkill")


def _find_deletes_broadly(inv: Invocation, roots: Roots) -> bool:
    if inv.program != "find":
        return False
    args = list(inv.args)
    starts = [w.text for w in find_starts(inv)]
    removers = ("rm", "shred", "unlink")
    deletes = "-delete" in args or any(
        a in EXEC_ACTIONS and j + 1 < len(args) and args[j + 1].rsplit("/", 1)[-1] in removers
        for j, a in enumerate(args)
    )
    return deletes and any(_broad_system_path(s) for s in starts)


RULES: tuple[Rule, ...] = (
    Rule("recursive delete of a broad path (rm -rf /)", _rm_broad),
    Rule("rm --no-preserve-root", _rm_no_preserve_root),
    Rule("formats a filesystem (mkfs)", _makes_filesystem),
    Rule("partitions a disk (fdisk, parted)", _partitions),
    Rule("wipes a disk (wipefs)", _wipes),
    Rule("writes to a device (dd of=/dev/…)", _dd_to_device),
    Rule(DISK_WRITE, _tee_to_disk),
    Rule(SYSTEM_WRITE, _tee_to_system),
    Rule("recursive or world-writable chmod (chmod -R 777, chmod 777 /)", _chmod_dangerous),
    Rule("recursive chown of a broad path (chown -R … /)", _chown_dangerous),
    Rule(DOWNLOAD_RUN, _runs_download),
    Rule("force push (git push --force)", _git_force_push),
    Rule("discards uncommitted changes (git reset --hard)", _git_reset_hard),
    Rule("deletes untracked files and directories (git clean -fd)", _git_clean_dirs),
    Rule("runs as another user (sudo, doas, su)", _elevates),
    Rule("shuts down or reboots the machine", _powers_off),
    Rule("kills every process (kill -9 -1)", _kills_everything),
    Rule("kills processes by name (killall, pkill)", _kills_by_name),
    Rule("deletes files across a broad path (find / -delete)", _find_deletes_broadly),
)
