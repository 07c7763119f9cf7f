"""Fixtures most test modules share. A module that needs another scope defines its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_provider import FakeProvider


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    """The scripted provider server, one per test module (each test scripts its replies)."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory: the session's cwd."""
    path = tmp_path / "project"
    path.mkdir()
    return path
