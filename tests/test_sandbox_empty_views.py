"""The empty read-only folders a launch shows (the emptied /tmp and /var/tmp, hidden secret
folders, a missing `.git/modules`) are read-only overlays of two empty folders of the
agent's (`empty_layers`): nothing a command does may put anything in them, where every
later command would see it, and a launch still works when they are gone. Real bwrap."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.sandbox import empty_layers as layers_module
from tests.test_sandbox_fence import home, repo, run, sandboxed

__all__ = ["home", "repo"]  # the fixtures, shared with test_sandbox_fence


@pytest.fixture
def fresh_layers() -> Iterator[None]:
    """Layers of this test's own: it removes them."""
    layers_module.empty_layers.cache_clear()
    yield
    layers_module.empty_layers.cache_clear()


def layers_in_use(sandbox: object) -> tuple[Path, Path]:
    from hermes_core.sandbox.bwrap import Sandbox

    assert isinstance(sandbox, Sandbox) and sandbox.bwrap is not None
    layers = layers_module.empty_layers(sandbox.bwrap)
    assert layers is not None, "a read-only overlay of two empty folders mounts on this machine"
    return layers


async def test_the_empty_folders_a_command_sees_stay_empty_and_read_only(
    repo: Path, home: Path, fresh_layers: None
) -> None:
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("KEY\n")
    ws, sandbox = sandboxed(repo, home)
    layers = layers_in_use(sandbox)
    attacks = {
        "ls -A ~/.ssh": "",
        "ls -A /var/tmp": "",
        "ls -A .git/modules": "",
        "echo x > ~/.ssh/authorized_keys": "Read-only file system",
        "mkdir -p .git/modules/evil": "Read-only file system",
        "echo x > /var/tmp/planted": "Read-only file system",
        "echo x > /tmp/planted": "Read-only file system",
        f"ls {layers[0]}": "No such file or directory",  # the temp dir is emptied: not there
    }
    for attack, expected in attacks.items():
        code, out = await run(ws, attack, home)
        assert expected in out if expected else out.strip() == "", (attack, out)
        assert expected == "" or code != 0, (attack, out)
    assert all(not any(layer.iterdir()) for layer in layers)
    assert (home / ".ssh" / "id_ed25519").read_text() == "KEY\n"
    assert not (repo / ".git" / "modules").exists() or not any((repo / ".git" / "modules").iterdir())


async def test_a_command_still_runs_and_is_fenced_when_the_empty_layers_were_removed(
    repo: Path, home: Path, fresh_layers: None
) -> None:
    ws, sandbox = sandboxed(repo, home)
    layers = layers_in_use(sandbox)
    code, out = await run(ws, "true", home)
    assert code == 0, out
    shutil.rmtree(layers[0].parent)  # a temp dir cleaner, while the agent runs
    code, out = await run(ws, "echo ok > app.txt && cat app.txt", home)
    assert code == 0 and out.strip() == "ok", out
    code, out = await run(ws, "mkdir -p .git/modules/evil", home)
    assert code != 0 and "Read-only file system" in out, out
