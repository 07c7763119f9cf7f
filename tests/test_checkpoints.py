"""Checkpoints on real directories: what a snapshot takes (ignore rules, .git, links), what a
restore puts back, deletes and keeps, a new session starting from the stat cache, and a
directory swapped for a link since the snapshot."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from hermes_core.rewind import checkpoints as checkpoints_module
from hermes_core.rewind.checkpoints import CheckpointStore, TurnRecord


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "a.py").write_text("a = 1\n")
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_text("generated\n")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    return project


def store(tmp_path: Path, root: Path, session: str = "s1") -> CheckpointStore:
    return CheckpointStore(tmp_path / "home", root, session)


def test_a_snapshot_takes_the_tree_as_git_would_show_it(tmp_path, root):
    (root / ".env").write_text("KEY=1\n")
    os.symlink("/etc/passwd", root / "src" / "passwd")
    manifest = store(tmp_path, root).scan()
    # A secret (.env) is not copied into the agent's store: the tools may neither read nor
    # write it, and the sandbox hides it from commands, so no turn of the agent changes it.
    assert set(manifest) == {"src/a.py", ".gitignore"}
    assert not list(root.glob(".git/objects")) and (root / ".git" / "config").read_text() == "[core]\n"


def test_restore_puts_back_edits_removes_creations_and_revives_deletions(tmp_path, root):
    (root / "src" / "gone.py").write_text("old\n")
    checkpoints = store(tmp_path, root)
    before = checkpoints.snapshot()
    (root / "src" / "a.py").write_text("a = 2\n")
    (root / "src" / "new.py").write_text("new\n")
    (root / "src" / "gone.py").unlink()
    os.chmod(root / "src" / "a.py", 0o755)
    after = checkpoints.snapshot()
    report = checkpoints.restore([TurnRecord("p1", before, after)])
    assert sorted(report.restored) == ["src/a.py", "src/gone.py"]
    assert report.deleted == ["src/new.py"]
    assert (root / "src" / "a.py").read_text() == "a = 1\n"
    assert (root / "src" / "gone.py").read_text() == "old\n"
    assert not (root / "src" / "new.py").exists()
    assert (root / "build" / "out.bin").exists()  # ignored: never touched


def test_a_file_changed_by_hand_after_the_turn_is_kept_unless_forced(tmp_path, root):
    checkpoints = store(tmp_path, root)
    before = checkpoints.snapshot()
    (root / "src" / "a.py").write_text("agent\n")
    after = checkpoints.snapshot()
    (root / "src" / "a.py").write_text("mine\n")
    record = TurnRecord("p1", before, after)
    assert checkpoints.restore([record]).kept == ["src/a.py"]
    assert (root / "src" / "a.py").read_text() == "mine\n"
    assert checkpoints.restore([record], force=True).restored == ["src/a.py"]
    assert (root / "src" / "a.py").read_text() == "a = 1\n"


def test_a_new_session_reads_only_what_changed_and_shares_the_contents(tmp_path, root):
    first = store(tmp_path, root)
    digest = first.snapshot()
    second = store(tmp_path, root, "s2")
    assert second.objects.load_seen()  # the first cold scan left its stat cache
    assert second.snapshot() == digest
    assert len(list((tmp_path / "home").rglob("*.pack"))) == 1  # nothing new to store


def test_a_directory_swapped_for_a_link_is_not_written_through(tmp_path, root):
    checkpoints = store(tmp_path, root)
    before = checkpoints.snapshot()
    (root / "src" / "a.py").write_text("changed\n")
    after = checkpoints.snapshot()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "src" / "a.py").unlink()
    (root / "src").rmdir()
    os.symlink(outside, root / "src")
    report = checkpoints.restore([TurnRecord("p1", before, after)], force=True)
    assert report.restored == [] and "src -> " in report.failed[0]
    assert list(outside.iterdir()) == []


def test_a_directory_swapped_for_a_link_between_listing_and_reading_is_not_taken(tmp_path, root, monkeypatch):
    """The listing saw `docs/id_ed25519` as a workspace file; by the read, `docs` leads to the
    user's ~/.ssh. The key must not reach the checkpoint, whose restore would write it back
    into the workspace where the model reads it."""
    (root / "docs").mkdir()
    (root / "docs" / "id_ed25519").write_text("decoy\n")
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    checkpoints = store(tmp_path, root)
    listed = checkpoints_module.list_files(root)
    assert "docs/id_ed25519" in listed
    (root / "docs" / "id_ed25519").unlink()
    (root / "docs").rmdir()
    os.symlink(ssh, root / "docs")
    monkeypatch.setattr(checkpoints_module, "list_files", lambda *_: listed)  # the swap came after it
    manifest = checkpoints.scan()
    assert "docs/id_ed25519" not in manifest and "src/a.py" in manifest
    assert not checkpoints.objects.has(hashlib.sha256(b"PRIVATE-KEY-MATERIAL\n").hexdigest())


def test_secrets_and_hard_links_are_not_taken_even_when_the_workspace_is_home(tmp_path, root, monkeypatch):
    """Opened where they really are: the user's keys when the workspace is their home, and
    a second name of a file elsewhere (a hard link may be ~/.ssh/id_rsa's) stay out of the
    store, whose restore would write them back where the model reads them."""
    monkeypatch.setenv("HOME", str(root))
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY\n")
    (root / ".aws").mkdir()
    (root / ".aws" / "credentials").write_text("AWS-SECRET\n")
    (root / "src" / ".env.production").write_text("TOKEN=1\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("ANOTHER-NAME\n")
    os.link(outside, root / "src" / "linked.txt")
    checkpoints = store(tmp_path, root)
    manifest = checkpoints.scan()
    assert set(manifest) == {"src/a.py", ".gitignore"}
    for secret in (b"PRIVATE-KEY\n", b"AWS-SECRET\n", b"TOKEN=1\n", b"ANOTHER-NAME\n"):
        assert not checkpoints.objects.has(hashlib.sha256(secret).hexdigest())
