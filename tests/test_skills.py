"""SKILL.md and prompt-command files: front matter, discovery order, malformed files."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hermes_core.prompt.skills import (
    PromptCommand,
    SkillError,
    discover_commands,
    discover_skills,
    split_front_matter,
)


def write_skill(folder: Path, name: str, text: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_front_matter_with_crlf_and_without() -> None:
    meta, body = split_front_matter("---\r\nname: a\r\ndescription: b\r\n---\r\nBody\r\n")
    assert meta == {"name": "a", "description": "b"} and body == "Body\r\n"
    assert split_front_matter("# just markdown\n---\n") == ({}, "# just markdown\n---\n")
    with pytest.raises(SkillError, match="not a mapping"):
        split_front_matter("---\n- a list\n---\nbody")


def test_the_project_wins_a_name_clash_and_bad_skills_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    write_skill(project, "review", "---\nname: review\ndescription: the project's review\n---\nP\n")
    write_skill(home, "review", "---\nname: review\ndescription: my review\n---\nH\n")
    write_skill(home, "spaced", "---\nname: two words\ndescription: x\n---\n")
    write_skill(home, "nodesc", "---\nname: nodesc\n---\n")
    (home / "binary").mkdir()
    (home / "binary" / "SKILL.md").write_bytes(b"\xff\xfe\x00")
    with caplog.at_level(logging.INFO):
        skills = discover_skills([project, home, tmp_path / "missing"])
    assert [(s.name, s.description, s.body()) for s in skills] == [("review", "the project's review", "P")]
    log = caplog.text
    assert "'two words' is not a letter" in log and "has no `description`" in log
    assert "binary/SKILL.md left out" in log and "already has the name 'review'" in log


def test_prompt_commands_fill_arguments(tmp_path: Path) -> None:
    folder = tmp_path / ".hermes" / "commands"
    folder.mkdir(parents=True)
    (folder / "fix.md").write_text("Fix $ARGUMENTS, then test $ARGUMENTS.\n")
    (folder / "bad name.md").write_text("ignored\n")
    [fix] = discover_commands(tmp_path)
    assert fix == PromptCommand("fix", "Prompt from fix.md", "Fix $ARGUMENTS, then test $ARGUMENTS.")
    assert fix.render("sse.py") == "Fix sse.py, then test sse.py."
    plain = PromptCommand("standup", "d", "Summarise today.")
    assert plain.render("") == "Summarise today." and plain.render("briefly") == "Summarise today.\n\nbriefly"
