"""Risky programs on operands that cannot be seen, or that reach outside the workspace.

`rm`, `mv`, `cp`, `dd`, `chmod`, `find -delete`, `sed -i`, `tee`, `kill` and the output options of
ordinary tools (`curl -o`, `tar -C`) ask when the shell computes what they work on (`$X`,
`$(…)`, globs, `{a,b}`, `~`) or when it lies outside the working directory. The table that
orders these tests is `hermes_core.command_rules.fail_closed`.
"""

from __future__ import annotations

import posixpath

from hermes_core.command_rules.words import (
    HARMLESS_TARGETS,
    Roots,
    beyond_working_directory,
    computed_or_outside,
    find_starts,
    long_options,
    names,
    outside,
    short_letters,
    split_words,
)
from hermes_core.shell.programs import Invocation, interpreter_family
from hermes_core.shell.tokens import Word

_DELETERS = frozenset(
    {"rm", "rmdir", "unlink", "srm", "rimraf", "del", "del-cli", "trash", "trash-put", "wipe"}
)
_RM_LONG = (
    "--recursive",
    "--force",
    "--no-preserve-root",
    "--preserve-root",
    "--dir",
    "--interactive",
    "--one-file-system",
    "--verbose",
    "--help",
    "--version",
)
_MOVERS = frozenset({"mv", "cp", "ln", "install", "rsync", "scp"})
_OWNERSHIP = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})
RISKY_PROGRAMS = (
    _DELETERS
    | _MOVERS
    | _OWNERSHIP
    | frozenset({"shred", "truncate", "dd", "find", "git", "tee", "sed", "perl", "kill", "mkfs", "fallocate"})
)


def rm_flags(inv: Invocation) -> set[str]:
    """`r`, `f` and `no-preserve-root` as given in any spelling (`-Rf`, `--recu`, `--forc`)."""
    flags: set[str] = set()
    options, _ = split_words(inv)
    letters = short_letters(options)
    if letters & {"r", "R"}:
        flags.add("r")
    if "f" in letters:
        flags.add("f")
    for option in options:
        for name in long_options(option, _RM_LONG):
            if name == "--recursive":
                flags.add("r")
            elif name == "--force":
                flags.add("f")
            elif name == "--no-preserve-root":
                flags.add("no-preserve-root")
    return flags


def deletes_computed(inv: Invocation, roots: Roots) -> bool:
    return inv.program in _DELETERS and any(not w.literal for w in split_words(inv)[1])


def deletes_outside(inv: Invocation, roots: Roots) -> bool:
    return inv.program in _DELETERS and any(outside(w.text, roots) for w in split_words(inv)[1])


def deletes_workspace(inv: Invocation, roots: Roots) -> bool:
    return inv.program in _DELETERS and any(_workspace_root(w.text, roots) for w in split_words(inv)[1])


def _workspace_root(text: str, roots: Roots) -> bool:
    """`rm -rf /home/me/project` (or a parent of it): the workspace itself, by its absolute path."""
    if not text.startswith("/"):
        return False
    norm = posixpath.normpath(text)
    return any(
        norm == root or root.startswith(norm.rstrip("/") + "/") for root in map(posixpath.normpath, roots)
    )


def fed_risky(inv: Invocation, roots: Roots) -> bool:
    return inv.fed and (inv.program in RISKY_PROGRAMS or interpreter_family(inv.program) is not None)


def shreds(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "shred"


def truncates(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "truncate"


def dd_writes(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "dd" and any(
        a.startswith("of=") and a[3:] not in HARMLESS_TARGETS for a in inv.args
    )


_MOVER_VALUE_OPTIONS = frozenset(
    {"-t", "-S", "--suffix", "-m", "--mode", "-o", "-g", "--owner", "--group", "-e"}
)


def _destination(inv: Invocation) -> tuple[list[Word], Word | None]:
    """Sources and destination of mv/cp/ln/install (`-t dir` or the last operand)."""
    words = list(inv.words[1:])
    for i, word in enumerate(words):
        if word.text in ("-t", "--target-directory") and i + 1 < len(words):
            return split_words(inv, _MOVER_VALUE_OPTIONS)[1], words[i + 1]
        if word.text.startswith("--target-directory="):
            return split_words(inv, _MOVER_VALUE_OPTIONS)[1], Word(
                word.text.partition("=")[2], expansions=word.expansions
            )
    operands = split_words(inv, _MOVER_VALUE_OPTIONS)[1]
    return (operands[:-1], operands[-1]) if len(operands) > 1 else (operands, None)


def moves_unseen(inv: Invocation, roots: Roots) -> bool:
    """mv takes its sources away and any of the four overwrites their destination."""
    if inv.program not in _MOVERS:
        return False
    sources, destination = _destination(inv)
    if inv.program == "rsync":
        options = split_words(inv)[0]
        deletes = any(o.startswith(("--del", "--remove-source")) for o in options)
        return deletes or (destination is not None and computed_or_outside(destination, roots))
    if inv.program in ("mv", "ln") and any(computed_or_outside(w, roots) for w in sources):
        return True
    return destination is not None and (
        computed_or_outside(destination, roots) or destination.text.startswith("/dev/")
    )


def ownership_unseen(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in _OWNERSHIP:
        return False
    options, operands = split_words(inv)
    recursive = "R" in short_letters(options) or any(long_options(o, ("--recursive",)) for o in options)
    reaches = computed_or_outside if recursive else beyond_working_directory  # `chmod +x *.sh` stays here
    return any(reaches(w, roots) for w in operands[1:])


_FIND_FILTERS = names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -mtime -mmin -atime -amin -ctime "
    "-cmin -newer -size -empty -lname -ilname -inum -samefile"
)
_FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def find_unseen(inv: Invocation, roots: Roots) -> bool:
    if inv.program != "find":
        return False
    words = list(inv.words[1:])
    texts = [w.text for w in words]
    if any(t in _FIND_WRITES for t in texts):
        return True
    if not any(t in _FIND_ACTIONS for t in texts):
        return False
    if any(computed_or_outside(w, roots) for w in find_starts(inv)):
        return True
    # `find . -delete`, with nothing to narrow it (`-name '*'` does not), is `rm -rf .`
    return not any(
        t in _FIND_FILTERS and (j + 1 >= len(texts) or texts[j + 1] not in ("*", ".*", "**"))
        for j, t in enumerate(texts)
    )


def in_place_unseen(inv: Invocation, roots: Roots) -> bool:
    """`sed -i`/`perl -i` edit their operands: outside or computed ones ask."""
    if inv.program not in ("sed", "perl"):
        return False
    options, operands = split_words(inv, frozenset({"-e", "-f", "--expression", "--file"}))
    in_place = any(
        o.startswith("-i") or o.startswith("--in-place") or ("i" in o[1:] and not o.startswith("--"))
        for o in options
    )
    if not in_place:
        return False
    files = operands if inv.program == "perl" or _sed_has_expression(options) else operands[1:]
    return any(beyond_working_directory(w, roots) for w in files)


def _sed_has_expression(options: list[str]) -> bool:
    return any(o in ("-e", "--expression", "-f", "--file") or o.startswith("--expression=") for o in options)


def tee_unseen(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "tee" and any(computed_or_outside(w, roots) for w in split_words(inv)[1])


def kills_computed(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in ("kill", "pkill", "killall"):
        return False
    operands = [w for w in inv.words[1:] if not (w.literal and w.text.startswith("-"))]
    return any(not w.literal or w.text == "0" for w in operands)


_OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {
    "curl": ("-o", "--output", "--output-dir"),
    "wget": ("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a"),
    "sort": ("-o", "--output"),
    "shuf": ("-o", "--output"),
    "patch": ("-o", "--output"),
    "iconv": ("-o", "--output"),
    "openssl": ("-out",),
    "git": ("--output",),
    "tar": ("-C", "--directory"),
    "unzip": ("-d",),
    "cmake": (),
}


def writes_through_option(inv: Invocation, roots: Roots) -> bool:
    """`curl -o ~/.bashrc`, `sort -o ~/x`, `tar -xf a.tar -C ~`, `unzip a.zip -d /`."""
    names = _OUTPUT_OPTIONS.get(inv.program)
    if names is None:
        return False
    words = list(inv.words[1:])
    if inv.program == "cmake":
        texts = [w.text for w in words]
        if "-E" in texts and any(
            t in texts
            for t in (
                "rm",
                "remove",
                "remove_directory",
                "rename",
                "copy",
                "copy_directory",
                "create_symlink",
                "touch",
            )
        ):
            return any(
                computed_or_outside(w, roots)
                for w in words[texts.index("-E") + 2 :]
                if not w.text.startswith("-")
            )
        return False
    if inv.program == "tar" and any(w.text in ("-P", "--absolute-names") for w in words):
        return True
    for i, word in enumerate(words):
        text = word.text
        value: Word | None = None
        if text in names and i + 1 < len(words):
            value = words[i + 1]
        elif text.startswith("--") and "=" in text and text.partition("=")[0] in names:
            value = Word(text.partition("=")[2], expansions=word.expansions)
        elif len(names) and any(text.startswith(n) and len(text) > len(n) and len(n) == 2 for n in names):
            value = Word(text[2:], expansions=word.expansions)  # `-o~/x`, `-C/`
        if value is not None and computed_or_outside(value, roots):
            return True
    return False


def deletes_container_data(inv: Invocation, roots: Roots) -> bool:
    """`docker system prune`, `docker volume rm`: databases and caches kept outside the project."""
    if inv.program not in ("docker", "podman", "nerdctl"):
        return False
    operands = [t for t in inv.args if not t.startswith("-")]
    return operands[:2] in (["system", "prune"], ["volume", "prune"], ["volume", "rm"]) or (
        operands[:2] == ["compose", "down"] and any(t in ("-v", "--volumes") for t in inv.args)
    )
