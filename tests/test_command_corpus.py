"""The danger rules against the corpus: every dangerous spelling asks, every everyday
command runs. One test per command, so a failure names the spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.command_rules.check import dangerous_rule
from tests.command_corpus import MUST_ASK, MUST_NOT_ASK


def test_the_corpus_is_as_large_as_the_readme_says() -> None:
    assert len(set(MUST_ASK)) == len(MUST_ASK) >= 150
    assert len(set(MUST_NOT_ASK)) == len(MUST_NOT_ASK) >= 100


@pytest.mark.parametrize("command", MUST_ASK)
def test_dangerous_spelling_asks(command: str) -> None:
    assert dangerous_rule(command) is not None, f"{command!r} would run without asking"


@pytest.mark.parametrize("command", MUST_NOT_ASK)
def test_everyday_command_runs_without_asking(command: str) -> None:
    rule = dangerous_rule(command)
    assert rule is None, f"{command!r} asks: {rule}"


def test_the_readme_states_the_corpus_counts() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert f"**{len(MUST_ASK)} dangerous spellings that must ask**" in readme
    assert f"**{len(MUST_NOT_ASK)}\neveryday commands that must not**" in readme or (
        f"**{len(MUST_NOT_ASK)} everyday commands that must not**" in readme
    )
