"""Skills (folders with a SKILL.md) and prompt commands (`.hermes/commands/*.md`).

A skill is the open SKILL.md format: YAML front matter with `name` and `description`,
then Markdown instructions; files beside SKILL.md are the skill's resources. Skills come
from the user's home (`~/.hermes-acp/skills/`) and the repository (`.hermes/skills/`,
`.claude/skills/`). A prompt command is a Markdown file whose body (with `$ARGUMENTS`
replaced) is sent as the user's message; its front matter may give a `description`.

Discovery never raises: a malformed file is left out with a warning in the log.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_core.errors import InvalidInput
from hermes_core.prompt.repository import repository_root

log = logging.getLogger(__name__)

# The shape of a slash-command name; also what a skill's `name` must look like.
COMMAND_NAME = re.compile(r"[A-Za-z][\w-]*")
MAX_SKILL_BYTES = 200_000
MAX_LISTED_FILES = 50
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillError(InvalidInput):
    """A SKILL.md or command file that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md
    root: Path  # the skills folder it was found in: it is read beneath it

    def body(self) -> str:
        """The instructions, read afresh (the user may have edited them)."""
        _, body = split_front_matter(_read(self.path, self.root))
        return body.strip()

    def resources(self) -> list[str]:
        """Files beside SKILL.md, relative to its folder (the first MAX_LISTED_FILES)."""
        folder = self.path.parent
        found: list[str] = []
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path != self.path:
                found.append(str(path.relative_to(folder)))
                if len(found) >= MAX_LISTED_FILES:
                    break
        return found

    def loaded_text(self) -> str:
        """What the model gets when it loads the skill."""
        lines = [f'<skill name="{self.name}" folder="{self.path.parent}">', self.body()]
        resources = self.resources()
        if resources:
            lines += ["", "Files in the skill's folder (read them with the file tools when needed):"]
            lines += [f"- {self.path.parent / name}" for name in resources]
        lines.append("</skill>")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class PromptCommand:
    name: str
    description: str
    template: str

    def render(self, arguments: str) -> str:
        """The template with `$ARGUMENTS` replaced; arguments are appended when it has none."""
        if "$ARGUMENTS" in self.template:
            return self.template.replace("$ARGUMENTS", arguments)
        return f"{self.template}\n\n{arguments}".strip() if arguments else self.template


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """({front matter}, body); ({}, text) without front matter. SkillError if it is not YAML
    or not a mapping."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    import yaml

    try:
        data = yaml.safe_load(match.group(1))
    except (yaml.YAMLError, RecursionError) as exc:  # nested past the parser's depth: the repository's
        raise SkillError(f"its front matter is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillError("its front matter is not a mapping of keys to values")
    return data, text[match.end() :]


def skill_folders(home: Path, cwd: Path) -> list[Path]:
    """Where skills live, the project's first (it wins a name clash over the user's)."""
    root = repository_root(cwd) or Path(cwd)
    return [root / ".hermes" / "skills", root / ".claude" / "skills", Path(home) / "skills"]


def discover_skills(folders: list[Path]) -> list[Skill]:
    """Every usable skill in `folders`, sorted by name; the first of a name wins."""
    skills: dict[str, Skill] = {}
    for folder in folders:
        try:
            candidates = sorted(folder.glob("*/SKILL.md")) if folder.is_dir() else []
        except OSError as exc:
            log.warning("cannot list skills in %s: %s", folder, exc)
            continue
        for path in candidates:
            try:
                skill = load_skill(path, folder)
            except (SkillError, OSError, UnicodeDecodeError) as exc:
                log.warning("skill %s left out: %s", path, exc)
                continue
            if skill.name in skills:
                taken = skills[skill.name].path
                log.info("skill %s left out: %s already has the name %r", path, taken, skill.name)
                continue
            skills[skill.name] = skill
    return [skills[name] for name in sorted(skills)]


def load_skill(path: Path, root: Path | None = None) -> Skill:
    """The skill at `path` (a SKILL.md), read beneath `root` (default: the skill's own folder)."""
    root = root if root is not None else path.parent
    meta, _ = split_front_matter(_read(path, root))
    name = meta.get("name")
    description = meta.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError("its front matter has no `name`")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("its front matter has no `description`")
    name = name.strip()
    if not COMMAND_NAME.fullmatch(name):
        raise SkillError(f"the name {name!r} is not a letter followed by letters, digits, - or _")
    return Skill(name=name, description=" ".join(description.split()), path=path, root=root)


def discover_commands(cwd: Path) -> list[PromptCommand]:
    """The prompt commands in the repository's `.hermes/commands/`, sorted by name."""
    folder = (repository_root(cwd) or Path(cwd)) / ".hermes" / "commands"
    commands: list[PromptCommand] = []
    try:
        paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
    except OSError as exc:
        log.warning("cannot list commands in %s: %s", folder, exc)
        return []
    for path in paths:
        name = path.stem
        if not COMMAND_NAME.fullmatch(name):
            log.warning("command %s left out: %r is not a command name", path, name)
            continue
        try:
            meta, body = split_front_matter(_read(path, folder))
        except (SkillError, OSError, UnicodeDecodeError) as exc:
            log.warning("command %s left out: %s", path, exc)
            continue
        description = meta.get("description")
        if not isinstance(description, str) or not description.strip():
            description = f"Prompt from {path.name}"
        commands.append(PromptCommand(name, " ".join(description.split()), body.strip()))
    return commands


def _read(path: Path, root: Path) -> str:
    """The file's text, opened beneath `root` (the folder it was found in) by the file tools'
    rules: a repository's skill or command may be a symlink to `~/.ssh/id_ed25519`."""
    from hermes_core.workspace import FileTooLarge, WorkspaceError, WorkspaceScope

    try:
        data = WorkspaceScope(root).read_bytes(path, MAX_SKILL_BYTES)
    except FileTooLarge:
        raise SkillError(f"it is larger than {MAX_SKILL_BYTES:,} bytes") from None
    except WorkspaceError as exc:
        raise SkillError(str(exc)) from None
    from hermes_core.sandbox.git_credentials import shown

    return shown(data.decode("utf-8"))  # a skill may be a link to `.git/config`, inside
