"""What the workspace watcher watches: the directories worth a kernel watch, and which
changed paths are noise (tool caches, dependencies, editor droppings, what .gitignore
excludes). The watching itself is `hermes_core.changes.watch`.
"""

from __future__ import annotations

import logging
import os

from watchfiles.filters import BaseFilter, DefaultFilter  # not the package: see watch.py
from watchfiles.main import Change

from hermes_core.fence.gitignore import Repository
from hermes_core.loop.turn_context import is_within

log = logging.getLogger(__name__)

DEFAULT_IGNORE_DIRS: frozenset[str] = frozenset(
    {
        # Version control and tool caches: churn the user did not author.
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".gradle",
        ".next",
        ".turbo",
        # Installed dependencies and build output: huge, and not what the user edits.
        "node_modules",
        ".venv",
        "venv",
        "dist",
        "build",
        # IDE state that changes on every click. `.vscode` stays watched: its settings,
        # tasks and launch files are written by the user and can matter to the agent.
        ".idea",
    }
)

# Editor droppings that are never the user's content: vim's write probe, swap files,
# backups, JetBrains safe-write temporaries (watchfiles' defaults, plus vim's probe).
IGNORE_NAME_PATTERNS: tuple[str, ...] = (*DefaultFilter.ignore_entity_patterns, r"^4913$")


def walk(
    tops: list[str],
    *,
    gits: dict[str, GitIgnores | None],
    keep: WorkspaceFilter,
    ignore_dirs: frozenset[str],
    known: int,
    limit: int,
    collect_files: bool,
) -> tuple[set[str], list[str]]:
    """The directories under `tops` worth watching (tops included), and their files
    (when `collect_files`). TooLarge when they and the `known` ones pass `limit`."""
    dirs: set[str] = set()
    files: list[str] = []
    stack = [top for top in tops if not _git_ignored_dir(top, gits, parents_checked=False)]
    while stack:
        directory = stack.pop()
        if directory in dirs:
            continue
        try:
            with os.scandir(directory) as entries:
                dirs.add(directory)  # only readable ones: watching the others would fail
                if known + len(dirs) > limit:
                    raise TooLarge(f"more than {limit:,} directories to watch")
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in ignore_dirs and not _git_ignored_dir(entry.path, gits):
                            stack.append(entry.path)
                    elif collect_files and keep(Change.added, entry.path):
                        files.append(entry.path)
        except OSError:
            continue
    return dirs, files


class WorkspaceFilter(DefaultFilter):
    """watchfiles' filter, judged on the path below its root: a workspace that itself
    lives under a directory called `build` is still watched."""

    def __init__(self, roots: list[str], ignore_dirs: frozenset[str]) -> None:
        super().__init__(ignore_dirs=tuple(sorted(ignore_dirs)), ignore_entity_patterns=IGNORE_NAME_PATTERNS)
        self._roots = sorted(roots, key=len, reverse=True)

    def __call__(self, change: Change, path: str) -> bool:
        for root in self._roots:
            if is_within(path, root):
                if path == root:
                    return False
                return BaseFilter.__call__(self, change, os.path.relpath(path, root))
        return False


class GitIgnores:
    """What .gitignore excludes under one root, read from the ignore files themselves
    (`hermes_core.fence.gitignore`): no git runs, so nothing the repository's config names runs either."""

    def __init__(self, root: str, repository: Repository) -> None:
        self.root = root
        self._repository = repository

    @classmethod
    def open(cls, root: str) -> GitIgnores | None:
        repository = Repository.around(root)
        # The user opened a folder their repository ignores (build/, a vendored tree):
        # within it, everything would read as ignored.
        if repository is None or repository.ignored(root, is_dir=True):
            return None
        return cls(root, repository)

    def ignored(self, paths: list[str]) -> set[str]:
        """Which of these paths .gitignore excludes (tracked files never are)."""
        return {p for p in paths if self._repository.ignored(p, is_dir=is_real_dir(p))}

    def ignored_dir(self, directory: str, *, parents_checked: bool) -> bool:
        """Whether .gitignore excludes this directory (with `parents_checked`: the caller
        knows it excludes none of the directories above)."""
        return self._repository.ignored(directory, is_dir=True, parents_checked=parents_checked)


def _git_ignored_dir(
    directory: str, gits: dict[str, GitIgnores | None], *, parents_checked: bool = True
) -> bool:
    return any(
        git is not None
        and is_within(directory, root)
        and git.ignored_dir(directory, parents_checked=parents_checked)
        for root, git in gits.items()
    )


class TooLarge(Exception):
    pass


def is_real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)
