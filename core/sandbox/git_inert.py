"""Whether a git config file names nothing git would run: only the keys `git init`,
`git clone`, `git remote add` and everyday settings write, each a plain value.

Used for a repository the sandbox could not protect in advance (one a sandboxed command
made or changed below a root, `planted`). An allow-list, not a list of dangerous keys:
git keeps adding keys that run programs (`core.fsmonitor`, `core.sshCommand`,
`diff.*.textconv`, `filter.*.process`, `remote.*.uploadpack`, `alias.*` with `!`, ...), and
anything this does not know counts as code.
"""

from __future__ import annotations

import re

# section -> keys with a plain value (a section with a subsection, `[remote "origin"]`, is
# written `remote.*`).
_INERT: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
            "safecrlf",
            "quotepath",
            "compression",
            "loosecompression",
            "sparsecheckout",
            "sparsecheckoutcone",
            "untrackedcache",
            "checkstat",
            "trustctime",
            "abbrev",
            "worktree",  # a submodule's `modules/<name>/config`: where its work tree is
        }
    ),
    "remote.*": frozenset({"url", "pushurl", "fetch", "push", "tagopt", "prune", "mirror", "promisor"}),
    "branch.*": frozenset({"remote", "merge", "rebase", "pushremote", "description"}),
    "extensions": frozenset(
        {"objectformat", "worktreeconfig", "partialclone", "preciousobjects", "refstorage"}
    ),
    "user": frozenset({"name", "email"}),
    "init": frozenset({"defaultbranch"}),
    "pull": frozenset({"rebase", "ff"}),
    "push": frozenset({"default", "autosetupremote"}),
    "fetch": frozenset({"prune"}),
    "gc": frozenset({"auto"}),
    "index": frozenset({"version"}),
    "rerere": frozenset({"enabled"}),
    "submodule.*": frozenset({"url", "active", "branch"}),  # not `update`: it may be `!cmd`
}
_HEADER = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(\s+"(?:[^"\\]|\\.)*")?\s*\]')
_ENTRY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=.*)?$")


def names_no_code(text: str) -> bool:
    """True when every line of this config is a blank, a comment, a section header or an
    allowed key; anything else (an unknown key, a continued line, an include) is code."""
    section = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            return False  # a value continued on the next line: not parsed here
        header = _HEADER.match(line)
        if header:
            name = header.group(1).lower()
            if header.group(2) is not None:
                section = f"{name}.*"
            elif "." in name:  # the old `[remote.origin]` spelling
                section = f"{name.split('.', 1)[0]}.*"
            else:
                section = name
            line = line[header.end() :]
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        entry = _ENTRY.match(line)
        if entry is None or entry.group(1).lower() not in _INERT.get(section, frozenset()):
            return False
    return True
