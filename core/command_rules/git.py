"""git commands that discard work, rewrite history or run code given to them.

Options are read in any spelling git accepts (`--har` is `--hard`); a subcommand or
operand the shell computes asks for the destructive subcommands.
"""

from __future__ import annotations

import difflib
import os
import re

from hermes_core.command_rules.words import GIT_VALUE_OPTIONS, Roots, has_option, names
from hermes_core.shell.programs import Invocation
from hermes_core.shell.tokens import Word

# `git -c key=value`: keys that cannot make git run anything.
_GIT_SAFE_CONFIG = re.compile(
    r"(user\.(name|email)|color\.[\w.]+|core\.(quotepath|autocrlf|safecrlf|filemode|ignorecase|abbrev)|"
    r"advice\.\w+|init\.defaultbranch|pull\.(rebase|ff)|push\.(default|autosetupremote)|commit\.gpgsign|"
    r"tag\.gpgsign|safe\.directory|log\.\w+|diff\.(renames|algorithm|nopager)|merge\.conflictstyle|"
    r"column\.ui|status\.\w+|protocol\.version|http\.\w+|gc\.auto)=.*",
    re.IGNORECASE,
)


def git_subcommand(inv: Invocation) -> tuple[Word | None, list[Word]]:
    """git's subcommand word (past `-C dir`, `-c k=v`, …) and the words after it."""
    words = list(inv.words[1:])
    i = 0
    while i < len(words) and words[i].text.startswith("-"):
        i += 2 if words[i].text in GIT_VALUE_OPTIONS else 1
    return (words[i], words[i + 1 :]) if i < len(words) else (None, [])


def _git_global_options(inv: Invocation) -> list[str]:
    words = list(inv.words[1:])
    out: list[str] = []
    i = 0
    while i < len(words) and words[i].text.startswith("-"):
        if words[i].text in GIT_VALUE_OPTIONS and i + 1 < len(words):
            out.append(f"{words[i].text} {words[i + 1].text}")
            i += 2
        else:
            out.append(words[i].text)
            i += 1
    return out


def _git_runs_configured_code(inv: Invocation) -> bool:
    """`git -c core.pager=… `, `--config-env`, `--exec-path=`, `-c alias.x=!…`."""
    if inv.program != "git":
        return False
    for option in _git_global_options(inv):
        if option.startswith("-c "):
            if not _GIT_SAFE_CONFIG.fullmatch(option[3:]):
                return True
        elif option.startswith(("--config-env", "--exec-path")):
            return True
    return False


_GIT_CODE_OPTIONS = (
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--open-files-in-pager",
    "--extcmd",
    "--tool",
)


def git_rule(inv: Invocation, roots: Roots) -> str | None:
    """What a git command would destroy or run, or None."""
    if inv.program != "git":
        return None
    if _git_runs_configured_code(inv):
        return "git runs a command given in its configuration (git -c core.pager=…)"
    sub_word, rest = git_subcommand(inv)
    if sub_word is None:
        return None
    if not sub_word.literal:
        return "git subcommand computed by the shell"
    sub = sub_word.text
    if sub in _KNOWN_SUBCOMMANDS:
        return _subcommand_rule(sub, rest, roots)
    for meant in sorted(_GIT_DESTRUCTIVE_SUBCOMMANDS):
        if _may_stand_for(sub, meant) and (hit := _subcommand_rule(meant, rest, roots)):
            return f"git {sub} may stand for git {meant} (an alias or autocorrection): {hit}"
    return None


def _may_stand_for(name: str, subcommand: str) -> bool:
    """Whether an unknown subcommand may be an alias (`co` for checkout: its letters in
    order) or a typo git's autocorrection runs (`rset` for reset)."""
    letters = iter(subcommand)
    abbreviates = name[:1] == subcommand[:1] and all(c in letters for c in name)
    return abbreviates or bool(difflib.get_close_matches(name, [subcommand], n=1, cutoff=0.7))


def _subcommand_rule(sub: str, rest: list[Word], roots: Roots) -> str | None:
    texts = [w.text for w in rest]
    options = [t for t in texts if t.startswith("-") and t != "-"]
    operands = [w for w in rest if not (w.text.startswith("-") and w.literal)]
    if any(not w.literal for w in rest) and sub in _GIT_DESTRUCTIVE_SUBCOMMANDS:
        return f"git {sub} on paths or refs computed by the shell"
    if any(t.startswith("ext::") for t in texts) or has_option(options, *_GIT_CODE_OPTIONS):
        return "git runs a command given in its options (--upload-pack, ext::, --exec)"
    if sub == "reset" and has_option(options, "--hard", "--merge", "--keep"):
        return "discards uncommitted changes (git reset --hard)"
    if sub == "checkout" and _checkout_discards(texts, options, operands, roots):
        return "discards uncommitted changes (git checkout -- paths)"
    if (
        sub == "restore"
        and operands
        and not (
            has_option(options, "--staged", letters="S")
            and not has_option(options, "--worktree", letters="W")
        )
    ):
        return "discards uncommitted changes (git restore)"
    if sub == "switch" and has_option(options, "--discard-changes", "--force", letters="fC"):
        return "discards uncommitted changes (git switch --discard-changes)"
    if (
        sub == "clean"
        and (has_option(options, "--force", letters="f"))
        and not has_option(options, "--dry-run", letters="n")
    ):
        return "deletes untracked files (git clean -f)"
    if sub == "stash" and texts[:1] and texts[0] in ("drop", "clear"):
        return "deletes stashed changes (git stash drop/clear)"
    if sub == "branch" and (
        has_option(options, "--force", letters="DMCf")
        or (has_option(options, "--delete", letters="d") and has_option(options, "--force", letters="f"))
    ):
        return "deletes or overwrites a branch (git branch -D)"
    if sub == "push" and has_option(options, "--force", "--force-with-lease", letters="f"):
        return "force push (git push --force)"
    if sub == "push" and (
        has_option(options, "--delete", "--mirror", "--prune", letters="d")
        or any(w.text.startswith(":") for w in operands[1:])
    ):
        return "deletes remote branches (git push --delete, :branch)"
    if sub in ("filter-branch", "filter-repo"):
        return "rewrites history (git filter-branch)"
    if sub == "rm" and has_option(options, "--force", letters="f"):
        return "deletes files and their uncommitted changes (git rm -f)"
    if sub == "reflog" and texts[:1] and texts[0] in ("expire", "delete"):
        return "deletes reflog entries (git reflog expire)"
    if sub == "update-ref" and has_option(options, "--delete", letters="d"):
        return "deletes a ref (git update-ref -d)"
    if sub == "config" and _config_sets_code(texts):
        return "configures git to run a command (alias, pager, hooks, …)"
    if sub in ("worktree", "submodule") and has_option(options, "--force", letters="f"):
        return f"discards changes (git {sub} --force)"
    return None


_KNOWN_SUBCOMMANDS = names(
    "add am annotate apply archive bisect blame branch bundle cat-file check-ignore checkout cherry "
    "cherry-pick clean clone commit commit-tree config count-objects describe diff diff-tree difftool "
    "fetch filter-branch filter-repo for-each-ref format-patch fsck gc grep hash-object help init log "
    "ls-files ls-remote ls-tree lfs maintenance merge merge-base mergetool mv name-rev notes pull push "
    "range-diff rebase reflog remote repack replace request-pull reset restore rev-list rev-parse "
    "revert rm shortlog show show-branch show-ref sparse-checkout stash status submodule switch "
    "symbolic-ref tag update-index update-ref var verify-commit version whatchanged worktree"
)
_GIT_DESTRUCTIVE_SUBCOMMANDS = frozenset(
    {
        "reset",
        "checkout",
        "restore",
        "switch",
        "clean",
        "stash",
        "branch",
        "push",
        "rm",
        "config",
        "update-ref",
        "reflog",
        "filter-branch",
        "filter-repo",
        "worktree",
        "submodule",
        "tag",
        "mv",
    }
)


def _checkout_discards(texts: list[str], options: list[str], operands: list[Word], roots: Roots) -> bool:
    if "--" in texts or has_option(
        options, "--force", "--patch", "--ours", "--theirs", "--pathspec-from-file", letters="fp"
    ):
        return True
    names = [w.text for w in operands]
    if len(names) > 1 and not has_option(options, "-b", "-B", "--orphan", letters="bB"):
        return True  # `git checkout <tree> <paths>`
    # A lone operand is a branch or a path; a path-like one (`.`, `src/`, `a.py`), or one
    # that exists in the workspace (`git checkout src`), discards.
    return any(
        n in (".", "..", "*")
        or n.endswith("/")
        or re.search(r"\.[A-Za-z]\w*$", n)
        or _exists_in_workspace(n, roots)
        for n in names
    )


def _exists_in_workspace(name: str, roots: Roots) -> bool:
    try:
        return bool(roots) and os.path.lexists(os.path.join(roots[0], name))
    except (OSError, ValueError):
        return True


def _config_sets_code(texts: list[str]) -> bool:
    reads = {"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "get", "list"}
    if any(t in reads for t in texts):
        return False
    keys = [t for t in texts if not t.startswith("-")]
    if len(keys) < 2 and not any(t.startswith("--add") for t in texts):
        return False  # reading one key
    key = keys[0].lower() if keys[0] not in ("set",) else (keys[1].lower() if len(keys) > 1 else "")
    return not _GIT_SAFE_CONFIG.fullmatch(f"{key}=")
