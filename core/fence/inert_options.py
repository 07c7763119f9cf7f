"""When a program that runs nothing of the workspace's still does what no word of the
command shows, so an "always" for it outside the sandbox must not stretch to a later run:
`curl -K fetch.cfg` reads more options from a file of the workspace (`output =
/home/u/.bashrc`, `upload-file = ~/.ssh/id_rsa`), and `cp -r staging/. .` writes whatever
the tree holds by then (a `.vscode/tasks.json`, a `.husky/pre-commit`).
"""

from __future__ import annotations

from hermes_core.shell.programs import Invocation


def steered_beyond_its_words(inv: Invocation) -> bool:
    """Whether this run of an inert program reads options from a file or copies a tree."""
    return _reads_options_from_a_file(inv) or _copies_a_tree(inv)


def _copies_a_tree(inv: Invocation) -> bool:
    """`cp -r staging/. .`: what a recursive copy writes is what the tree holds by then
    (a `.vscode/tasks.json`, a `.husky/pre-commit`), which no word names."""
    if inv.program != "cp":
        return False
    for word in inv.words[1:]:
        text = word.text
        if text in ("--recursive", "--archive") or (
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
        if text.startswith("--") and text.split("=", 1)[0] in long_options:
            return True
        if text.startswith("-") and not text.startswith("--") and letter in text:
            return True
    return False
