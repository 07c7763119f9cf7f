"""What the workspace watcher watches: the directories worth a kernel watch, and which
changed paths are noise (tool caches, dependencies, editor droppings, what .gitignore
excludes). The watching itself is `core.watch`.
"""

from __future__ import annotations

import logging
import os
import subprocess

from watchfiles import BaseFilter, Change, DefaultFilter

from core.turn_context import is_within

log = logging.getLogger(__name__)

GIT_TIMEOUT_SECONDS = 5.0

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
    gits: dict[str, Git | None],
    keep: WorkspaceFilter,
    ignore_dirs: frozenset[str],
    known: int,
    limit: int,
    collect_files: bool,
) -> tuple[set[str], list[str]]:
    """The directories under `tops` worth watching (tops included), and their files
    (when `collect_files`). TooLarge when they and the `known` ones pass `limit`."""
    skipped: set[str] = set()
    for root, git in gits.items():
        if git is not None:
            inside = [t for t in tops if is_within(t, root)]
            if inside:
                skipped |= git.ignored_dirs(inside)
    dirs: set[str] = set()
    files: list[str] = []
    stack = list(tops)
    while stack:
        directory = stack.pop()
        if directory in skipped or directory in dirs:
            continue
        try:
            with os.scandir(directory) as entries:
                dirs.add(directory)  # only readable ones: watching the others would fail
                if known + len(dirs) > limit:
                    raise TooLarge(f"more than {limit:,} directories to watch")
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in ignore_dirs:
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


class Git:
    """The repository around one root, asked in batches. Every failure reads as
    "nothing is ignored": reporting too much beats breaking the turn."""

    def __init__(self, root: str) -> None:
        self.root = root

    @classmethod
    def open(cls, root: str) -> Git | None:
        result = _git(root, ["rev-parse", "--is-inside-work-tree"])
        if result is None or result.returncode != 0 or result.stdout.strip() != b"true":
            return None
        # The user opened a folder their repository ignores (build/, a vendored tree):
        # within it, everything would read as ignored.
        inside_ignored = _git(root, ["check-ignore", "-q", "."])
        if inside_ignored is None or inside_ignored.returncode == 0:
            return None
        return cls(root)

    def ignored(self, paths: list[str]) -> set[str]:
        """Which of these paths .gitignore excludes (tracked files never are)."""
        result = _git(self.root, ["check-ignore", "-z", "--stdin"], "\0".join(paths) + "\0")
        if result is None or result.returncode not in (0, 1):
            return set()
        return {p for p in result.stdout.decode("utf-8", "surrogateescape").split("\0") if p}

    def ignored_dirs(self, tops: list[str]) -> set[str]:
        """Untracked directories under `tops` that .gitignore excludes as a whole."""
        args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--", *tops]
        result = _git(self.root, args)
        if result is None or result.returncode != 0:
            return set()
        found: set[str] = set()
        for line in result.stdout.decode("utf-8", "surrogateescape").split("\0"):
            if line.endswith("/"):
                found.add(os.path.normpath(os.path.join(self.root, line)))
        return found


class TooLarge(Exception):
    pass


def _git(cwd: str, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[bytes] | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(
            ["git", "-C", cwd, *args],
            input=None if stdin is None else stdin.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("git %s failed: %s", args[0], exc)
        return None


def is_real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)
