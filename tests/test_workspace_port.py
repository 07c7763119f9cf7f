"""The Workspace port keeps its own fence: a tool that hands it whatever path the model
wrote, and remembers no check of its own, still cannot read, write, list or search outside
the workspace, on the local disk or through the editor's fs (the editor is a real ACP client
over a real connection). Approval (`allow_outside`) is the only way out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.bridge.workspace import ClientWorkspace
from hermes_core.workspace import LocalWorkspace, OutsideWorkspace, Workspace, WorkspaceScope
from tests.support.bridge_pair import open_pair
from tests.test_bridge_workspace import SID, Editor

SECRET = "ssh-key-material-1234"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(the project, a secret outside it); the project holds a link to the secret and a
    link to the folder it lies in."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    secret = elsewhere / "id_key"
    secret.write_text(SECRET + "\n")
    (project / "key-link").symlink_to(secret)
    (project / "dir-link").symlink_to(elsewhere)
    (project / "notes.txt").write_text("inside\n")
    return project, secret


@pytest.fixture(params=["local", "editor"])
async def workspace(request: pytest.FixtureRequest, layout: tuple[Path, Path]) -> AsyncIterator[Workspace]:
    project, _ = layout
    scope = WorkspaceScope(project)
    local = LocalWorkspace(scope)
    if request.param == "local":
        yield local
        return
    pair = await open_pair(Editor(project))
    try:
        yield ClientWorkspace(scope, pair.agent, SID, read=True, write=True, terminal=False, local=local)
    finally:
        await pair.aclose()


def careless_calls(workspace: Workspace, path: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every file door of the port, called the way a new tool that forgot the fence would."""
    return {
        "read_text": lambda: workspace.read_text(path),
        "read_bytes": lambda: workspace.read_bytes(path, 1_000_000),
        "write_text": lambda: workspace.write_text(path, "overwritten\n"),
        "list_files": lambda: workspace.list_files(path),
        "search": lambda: workspace.search(path, "ssh-key"),
    }


@pytest.mark.parametrize(
    "how", ["../elsewhere/id_key", "ABSOLUTE", "key-link", "dir-link/id_key", "dir-link"]
)
async def test_every_door_refuses_a_path_outside(
    workspace: Workspace, layout: tuple[Path, Path], how: str
) -> None:
    _, secret = layout
    path = str(secret) if how == "ABSOLUTE" else how
    for door, call in careless_calls(workspace, path).items():
        if door == "write_text" and how == "dir-link":
            continue  # a directory: nothing to write over
        with pytest.raises(OutsideWorkspace):
            await call()
    assert secret.read_text() == SECRET + "\n"


async def test_approval_is_the_way_out_and_inside_works(
    workspace: Workspace, layout: tuple[Path, Path]
) -> None:
    _, secret = layout
    assert await workspace.read_text(str(secret), allow_outside=True) == SECRET + "\n"
    assert await workspace.read_text("notes.txt") == "inside\n"
    found = await workspace.search(".", "inside")
    assert [(m.path, m.line) for m in found.matches] == [("notes.txt", 1)]
    listing = await workspace.list_files(".")
    assert "notes.txt" in listing.names
    assert not any("id_key" in name for name in listing.names)  # rg follows no link out
