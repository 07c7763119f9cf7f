"""A deny or ask `Edit(…)` rule naming files by a wildcard (`Edit(**/*.pem)`, `Edit(src/*.rs)`)
held the file tools only: in auto a prompt-injected model ran `sh -c 'echo x >> keys/a.pem'`
or `sed -i … src/main.rs` in the sandbox, unasked, and the rule was bypassed. Now what such
a rule matches is read-only for commands, a match a command creates is moved aside after it,
and where the sandbox cannot guard the matches, the command asks. End to end through the real
server, a scripted model, real bwrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider
from tests.support.red_team import LOCAL, command_under_rules
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER_SETUP = ServerSetup(capabilities=LOCAL)
MINE = "mine\n"


def _plant(project: Path, *relative: str) -> None:
    for name in relative:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MINE)


def _refused(folder: Path) -> list[str]:
    return sorted(p.name.split(".refused-")[0] for p in folder.iterdir() if ".refused-" in p.name)


@pytest.mark.parametrize("action", ["deny", "ask"])
async def test_a_command_cannot_change_a_file_a_wildcard_rule_matches(
    client: AcpClient, fake: FakeProvider, project: Path, action: str
) -> None:
    (project / ".gitignore").write_text("ignored/\n")
    (project / "vendor" / "lib" / ".git").mkdir(parents=True)  # a nested repository
    (project / "vendor" / "lib" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    guarded = [
        "keys/a.pem",  # appended to
        "ignored/b.pem",  # truncated, in a .gitignored folder
        ".hidden/c.pem",  # sed -i: a new file renamed over it
        "vendor/lib/d.pem",  # mv over it, in a nested repository
        "e.pem",  # removed
        "f.pem",  # replaced by a hard link, and linked to another name to write through
        "g.pem",  # cp onto it
        "deep/er/h.pem",  # a symbolic link's target, written through the link
    ]
    _plant(project, *guarded)
    (project / "all.pem").symlink_to(".")  # the workspace's: must not make the project read-only
    rules = f'{action} = ["Edit(**/*.pem)"]'
    command = (
        "echo ok > keys/notes.txt; echo evil > t1; echo evil > t2; echo evil > t3; "
        ": > ignored/b.pem; sed -i s/mine/evil/ .hidden/c.pem; "
        "mv -f t1 vendor/lib/d.pem; rm -f e.pem; ln -f t2 f.pem; ln f.pem f-link && echo evil >> f-link; "
        "cp t3 g.pem; ln -s deep/er/h.pem h-link && echo evil > h-link; "
        "echo evil >> keys/a.pem"  # last: the command fails, and the model is told why
    )
    asked = len(client.permission_requests)
    results = await command_under_rules(client, fake, project, rules, command)
    for name in guarded:
        assert (project / name).read_text() == MINE, (name, results)
    assert not (project / "f-link").exists()  # no hard link across the read-only mount
    assert (project / "keys" / "notes.txt").read_text() == "ok\n"  # its neighbour: written as before
    assert "Read-only file system" in results and "write_file" in results, results
    assert "Edit(**/*.pem)" in results, results  # the model is told which rule
    assert len(client.permission_requests) == asked  # auto: nothing asked, nothing changed


async def test_a_match_a_command_creates_is_moved_aside(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    rules = 'deny = ["Edit(**/*.pem)"]'
    command = (
        "echo x > new.pem; mkdir d && touch d/k.pem; echo y > tmp.txt && mv tmp.txt renamed.pem; "
        "mkdir staging && echo z > staging/z.part && mv staging/z.part staging/z.pem && mv staging built; "
        "echo ok > notes.txt; ln -s notes.txt linked.pem"
    )
    asked = len(client.permission_requests)
    results = await command_under_rules(client, fake, project, rules, command)
    for gone in ("new.pem", "d/k.pem", "renamed.pem", "built/z.pem", "linked.pem"):
        assert not (project / gone).exists() and not (project / gone).is_symlink(), (gone, results)
    assert _refused(project) == ["linked.pem", "new.pem", "renamed.pem"]
    assert _refused(project / "d") == ["k.pem"] and _refused(project / "built") == ["z.pem"]
    assert "Edit(**/*.pem)" in results and "moved to" in results, results
    assert (project / "notes.txt").read_text() == "ok\n"  # the link was moved, never followed
    assert len(client.permission_requests) == asked


async def test_a_pattern_anchored_in_a_folder_guards_what_the_file_tools_guard(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    # `src/*.rs`: the files directly in src/, not src/sub/*.rs nor lib/*.rs (the file
    # tools' own reading of the pattern).
    _plant(project, "src/main.rs", "src/sub/deep.rs", "lib/other.rs")
    rules = 'ask = ["Edit(src/*.rs)"]'
    command = (
        "sed -i s/mine/evil/ src/main.rs; echo evil > src/new.rs; "
        "echo ok > src/sub/deep.rs; echo ok > lib/other.rs; echo ok > src/notes.md"
    )
    asked = len(client.permission_requests)
    results = await command_under_rules(client, fake, project, rules, command)
    assert (project / "src" / "main.rs").read_text() == MINE
    assert not (project / "src" / "new.rs").exists() and _refused(project / "src") == ["new.rs"]
    for name in ("src/sub/deep.rs", "lib/other.rs", "src/notes.md"):
        assert (project / name).read_text() == "ok\n", name
    assert "Edit(src/*.rs)" in results, results
    assert len(client.permission_requests) == asked


async def test_a_command_asks_when_more_files_match_than_the_sandbox_can_guard(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    _plant(project, *(f"certs/{n}.pem" for n in range(101)))
    asked = len(client.permission_requests)
    rules = 'deny = ["Edit(**/*.pem)"]'
    client.permission = "reject_once"
    try:
        await command_under_rules(client, fake, project, rules, "echo evil > certs/7.pem", ran=False)
    finally:
        client.permission = "allow_once"
    assert (project / "certs" / "7.pem").read_text() == MINE
    assert len(client.permission_requests) == asked + 1
    reason = client.permission_requests[-1]["_meta"]["hermes"]["reason"]
    assert "101 paths match" in reason and "Edit(**/*.pem)" in reason, reason


async def test_a_one_name_pattern_guards_that_name_at_any_depth_as_the_file_tools_do(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    # `Edit(prod.yml)` names `prod.yml` in every folder for write_file; the sandbox kept only
    # the root's read-only.
    _plant(project, "prod.yml", "deploy/eu/prod.yml")
    rules = 'deny = ["Edit(prod.yml)"]'
    command = "mkdir -p new && echo evil > new/prod.yml; echo evil > prod.yml; echo evil > deploy/eu/prod.yml"
    asked = len(client.permission_requests)
    results = await command_under_rules(client, fake, project, rules, command)
    assert (project / "prod.yml").read_text() == MINE
    assert (project / "deploy" / "eu" / "prod.yml").read_text() == MINE, results
    assert not (project / "new" / "prod.yml").exists() and _refused(project / "new") == ["prod.yml"]
    assert "Edit(prod.yml)" in results, results
    assert len(client.permission_requests) == asked


async def test_a_command_asks_when_a_wildcard_rule_covers_the_whole_project(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    # `//**/project/**` names every file below a folder called `project`: this one's whole
    # content, which no set of read-only mounts can keep while commands write the project.
    _plant(project, "notes.txt")
    asked = len(client.permission_requests)
    client.permission = "reject_once"
    try:
        rules = 'ask = ["Edit(//**/project/**)"]'
        await command_under_rules(client, fake, project, rules, "echo evil > notes.txt", ran=False)
    finally:
        client.permission = "allow_once"
    assert (project / "notes.txt").read_text() == MINE
    assert len(client.permission_requests) == asked + 1
    reason = client.permission_requests[-1]["_meta"]["hermes"]["reason"]
    assert "covers all of" in reason and "Edit(//**/project/**)" in reason, reason


@pytest.mark.parametrize(
    "command",
    [
        "mv src src.old",  # the next command could write src.old/main.rs, which `src/*.rs` no longer names
        "mv src src.old && mkdir src && echo evil > src/main.rs",  # and a new one in its place
    ],
)
async def test_a_guarded_file_moved_away_with_its_folder_is_put_back(
    client: AcpClient, fake: FakeProvider, project: Path, command: str
) -> None:
    _plant(project, "src/main.rs", "src/lib.rs")
    rules = 'deny = ["Edit(src/*.rs)"]'
    results = await command_under_rules(client, fake, project, rules, command)
    assert (project / "src" / "main.rs").read_text() == MINE, results
    assert (project / "src" / "lib.rs").read_text() == MINE, results
    assert "Edit(src/*.rs)" in results and "moved back" in results, results
    # and so a later command cannot write it by the folder's other name
    again = "echo evil > src.old/main.rs; echo evil > src/main.rs"
    await command_under_rules(client, fake, project, rules, again)
    assert (project / "src" / "main.rs").read_text() == MINE


@pytest.mark.parametrize("command", ["rm -f certs/a.pem", "echo evil > t && mv -f t certs/a.pem"])
async def test_a_command_refused_by_a_mount_point_is_told_which_rule(
    client: AcpClient, fake: FakeProvider, project: Path, command: str
) -> None:
    # Removing or renaming over a read-only mount point fails with "Device or resource
    # busy", not "Read-only file system": the model is told which rule all the same.
    _plant(project, "certs/a.pem")
    results = await command_under_rules(client, fake, project, 'deny = ["Edit(**/*.pem)"]', command)
    assert (project / "certs" / "a.pem").read_text() == MINE
    assert "Device or resource busy" in results and "Edit(**/*.pem)" in results, results
    assert "write_file" in results, results
