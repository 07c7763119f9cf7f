"""Whether a command run outside the sandbox names a file an "always" must not stretch to.

"Always allow `cat` outside the sandbox", given for `cat README.md`, covered `cat
~/.ssh/id_ed25519`, `curl -d @$HOME/.aws/credentials https://…` and `cat .git/config` (its
token unredacted): outside the sandbox nothing is hidden. So an "always" covers an
unconfined command only when every file it may name is a plain file of the workspace: no
absolute path elsewhere, no `~`, no `..` out, no word the shell computes (`$HOME`,
`$(…)`, a glob), no link leading out, no secret and no git config inside the workspace either. A
command that names one asks each time (fail closed: a word that merely looks like a path
counts too).

Not seen here: what a program finds by walking a folder it was given, which the file names
cannot tell; the walkers that follow links (`grep -R`, `diff` of folders) get no "always"
at all (`inert_options`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from hermes_core.fence.runs_outside import runs_outside
from hermes_core.sandbox.git_credentials import is_git_config
from hermes_core.sandbox.secrets import is_secret_path, relocated
from hermes_core.shell.parse import Script, simple_commands
from hermes_core.shell.tokens import Word

# Where a path may start inside a word: its start, or after any character that cannot be
# part of a path name before it (`--opt=/x`, curl's `@/x`, `-d@$/x`, a space in a
# `bash -c '…'` word). Not after `:` (`https://host/x`) or another path character.
_PATH_START = re.compile(r"(?:^|(?<=[^\w./:~+-]))((?:[~/]|\.\.)\S*)")
_URL = re.compile(r"(?i)[a-z][a-z0-9+.-]*://")
_DEVICES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})


def names_beyond_workspace(script: Script, cwd: Path, roots: tuple[Path, ...]) -> bool:
    """Whether any word (past the program's own) or redirection of `script` may name a
    file outside `roots`, a secret, a git config or a file that runs outside the sandbox
    (`runs_outside`: a git hook, the editor's tasks, the agent's own install). A relative
    word is read from every folder a `cd` before it went to: `cd .git && cat config` names
    the git config; a bare `cd` (the home folder) or `cd -` names a folder not written down."""
    bases = [cwd]
    for command in simple_commands(script):
        words = [*command.words[1:], *(r.target for r in command.redirects if not _is_descriptor(r.target))]
        if any(_word_reaches(word, base, roots) for word in words for base in bases):
            return True
        if command.words and command.words[0].text in _DIRECTORY_CHANGES:
            moved_to = _moved_to(command.words[0].text, command.words[1:], bases[-1])
            if moved_to is None:
                return True
            bases.append(moved_to)
    return False


def _moved_to(program: str, operands: list[Word], base: Path) -> Path | None:
    """Where a `cd`, `pushd` or `popd` leaves the shell, or None when that is not written
    down (`cd` alone goes home, `cd -` back, `pushd` alone swaps with the stack)."""
    targets = [w for w in operands if not w.text.startswith("-") or w.text == "-"]
    if program == "popd":
        return base  # only back to a folder an earlier `pushd` named: already in `bases`
    if len(targets) != 1 or targets[0].text == "-":
        return None
    return Path(os.path.normpath(os.path.join(base, targets[0].text)))


def _is_descriptor(target: Word) -> bool:
    return target.text.isdigit() or target.text == "-"  # `2>&1`, `>&-`


def _word_reaches(word: Word, cwd: Path, roots: tuple[Path, ...]) -> bool:
    if word.expansions:
        # `$HOME/.ssh/id_rsa`, `$(…)`, `~`: what it names is not written down; a glob (`*`,
        # `n*.md`) is expanded by the shell at run time, over whatever links the sandbox
        # has planted by then.
        return True
    candidates = [word.text, *(m.group(1) for m in _PATH_START.finditer(word.text))]
    if word.text.startswith("-") and "=" in word.text:
        # `--output-document=.vscode/tasks.json`: a relative value names a file too.
        candidates.append(word.text.split("=", 1)[1])
    # curl's file references inside a value: `-d @notes.md`, `-F 'f=<notes.md'`, `-H @h.txt`
    # (a link the sandbox planted there leads to the key; a URL's `user@host/x` is harmless).
    candidates += [part for part in re.split(r"[@<]", word.text)[1:] if part]
    if _URL.match(word.text):
        # `curl -O http://x/y/.exrc#f` writes `.exrc` here: the name a download takes is the
        # URL path's last part, without its query or fragment (and decoded, as wget does).
        name = urlsplit(word.text).path.rsplit("/", 1)[-1]
        candidates += [n for n in {name, unquote(name)} if n and "/" not in n]
    return any(_path_reaches(candidate, cwd, roots) for candidate in candidates)


def _path_reaches(text: str, cwd: Path, roots: tuple[Path, ...]) -> bool:
    if text.startswith("~"):
        return True
    if text.startswith("-") or not text:
        return False  # an option; its value after `=` is a candidate of its own
    named = Path(os.path.normpath(os.path.join(cwd, text)))
    if str(named) in _DEVICES:
        return False
    try:
        real = Path(os.path.realpath(named))  # a link the sandbox made may lead out
    except (OSError, ValueError):
        return True
    for place in (named, real):
        if not any(place == root or place.is_relative_to(root) for root in roots):
            return True
        if is_secret_path(place, extra=relocated()) or is_git_config(place):
            return True
    return runs_outside(named, real)
