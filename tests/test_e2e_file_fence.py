"""Files are opened beneath the workspace, not checked and then opened (issue 19, findings 5-7).

An attacker's view through the real server with a scripted model: everything in the project
is the attacker's, including symlinks planted to the user's secrets, FIFOs, and a background
process that swaps a file for a symlink while the agent works.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, PLAIN_CAPABILITIES, AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.homes import plant, user_home
from tests.support.waiting import HANG, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nSSH-KEY-SECRET-b3BlbnNzaC1rZXk\n"
AWS = "[default]\naws_secret_access_key = AWS-SECRET-wJalrXUtnFEMI\n"
CONFIG_MARK = "CONFIG-SECRET-toml-comment"


KEY, AWS_CREDENTIALS, CONFIG = ".ssh/id_ed25519", ".aws/credentials", ".hermes-acp/config.toml"
HOME_SECRETS = {KEY: SSH_KEY, AWS_CREDENTIALS: AWS, CONFIG: f"# {CONFIG_MARK}\n"}  # the user's, in HOME


def model_saw(fake: FakeProvider) -> str:
    return "\n".join(json.dumps(request.body) for request in fake.requests)


def stored_bytes(home: Path) -> bytes:
    """The SQLite store the agent keeps under its home, with its WAL."""
    store = sorted((home / ".hermes-acp").glob("sessions.db*"))
    assert store, "the store was not found"
    return b"".join(p.read_bytes() for p in store)


def tool_results(fake: FakeProvider) -> dict[str, str]:
    """What the model was told about each tool call, by call id."""
    told: dict[str, str] = {}
    for request in fake.requests:
        for message in request.body.get("messages", []):
            if message.get("role") == "tool":
                told[message["tool_call_id"]] = message["content"]
    return told


def final_statuses(client: AcpClient, session: str) -> dict[str, str]:
    final: dict[str, str] = {}
    for update in client.session_updates(session):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and update.get("status"):
            final[update["toolCallId"]] = update["status"]
    return final


# -- finding 5: instruction files, skills and commands planted as symlinks to secrets ----------


async def test_instruction_files_skills_and_commands_that_link_out_are_not_sent_nor_stored(
    fake: FakeProvider, tmp_path: Path
) -> None:
    home = user_home(tmp_path)
    secrets = plant(home, HOME_SECRETS)
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "rules.md").write_text("LINKED-RULE-OK: tabs, not spaces\n")
    # What a sandboxed command can leave behind for the next session:
    (project / "AGENTS.md").symlink_to(secrets[KEY])
    (project / "CLAUDE.md").symlink_to(secrets[AWS_CREDENTIALS])
    (project / ".cursorrules").symlink_to(secrets[CONFIG])
    (project / ".hermes.md").symlink_to("docs/rules.md")  # a link that stays inside is followed
    (project / ".hermes" / "commands").mkdir(parents=True)
    (project / ".hermes" / "commands" / "leak.md").symlink_to(secrets[KEY])
    outside_skill = tmp_path / "elsewhere" / "SKILL.md"
    outside_skill.parent.mkdir()
    outside_skill.write_text(
        "---\nname: leak\ndescription: SKILL-SECRET-description\n---\nSKILL-SECRET-body\n"
    )
    (project / ".hermes" / "skills" / "leak").mkdir(parents=True)
    (project / ".hermes" / "skills" / "leak" / "SKILL.md").symlink_to(outside_skill)

    fake.forget()
    fake.script([Reply(text="hello")])
    async with connected(server_env(home, fake), NO_CAPABILITIES) as (_, client):
        session = (await client.new_session(project))["sessionId"]
        commands = await client.wait_for_update("available_commands_update", session)
        assert await client.prompt(session, "hi") == {"stopReason": "end_turn"}

    sent = model_saw(fake)
    assert "LINKED-RULE-OK" in sent  # the project's own instructions still arrive
    kept = stored_bytes(home)
    for secret in ("SSH-KEY-SECRET", "AWS-SECRET", CONFIG_MARK, "SKILL-SECRET"):
        assert secret not in sent
        assert secret.encode() not in kept
    assert "leak" not in {c["name"] for c in commands["availableCommands"]}


# -- finding 7: FIFOs ---------------------------------------------------------------------------


@pytest.mark.parametrize("capabilities", [NO_CAPABILITIES, PLAIN_CAPABILITIES], ids=["local", "editor-fs"])
async def test_a_reply_reading_twelve_fifos_stalls_no_session_no_cancel_and_no_exit(
    fake: FakeProvider, tmp_path: Path, capabilities: dict[str, Any]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for index in range(12):
        os.mkfifo(project / f"p{index}")
    (project / "notes.txt").write_text("plain notes\n")
    pipes = [ToolCallSpec("read_file", {"path": f"p{i}"}, id=f"fifo{i}") for i in range(12)]
    fake.forget()
    # After the 12 reads the model streams slowly: the turn is still running for the cancel.
    fake.route(
        "read the pipes",
        [Reply(tool_calls=pipes), Reply(text="word " * 4000, chunk_size=4, chunk_delay=0.01)],
    )
    notes = ToolCallSpec("read_file", {"path": "notes.txt"}, id="notes")
    fake.route("read the notes", [Reply(tool_calls=[notes]), Reply(text="ok")])
    attached = {"type": "resource_link", "uri": (project / "p0").as_uri(), "name": "p0"}
    fake.route("look at this", [Reply(text="seen")])

    async with connected(server_env(tmp_path / "home", fake), capabilities) as (server, client):
        first = (await client.new_session(project))["sessionId"]
        stalled = client.start_prompt(first, "read the pipes", within=HANG)
        await until(
            lambda: sum(final_statuses(client, first).get(f"fifo{i}") == "failed" for i in range(12)) == 12,
            "all 12 FIFO reads to fail",
        )
        await client.wait_for_update("agent_message_chunk", first, within=HANG)

        # Another session opens and reads while the first turn runs.
        second = (await client.new_session(project))["sessionId"]
        assert await client.prompt(second, "read the notes", within=HANG) == {"stopReason": "end_turn"}
        assert "plain notes" in tool_results(fake)["notes"]
        # An @-attached FIFO becomes a note, not a hang.
        blocks = [{"type": "text", "text": "look at this"}, attached]
        assert await client.prompt(second, blocks, within=HANG) == {"stopReason": "end_turn"}

        await client.cancel(first)
        assert await asyncio.wait_for(stalled, HANG) == {"stopReason": "cancelled"}
        await server.close_stdin()
        assert await server.wait(HANG) == 0  # it exits at end of input

    told = tool_results(fake)
    for index in range(12):
        assert "FIFO" in told[f"fifo{index}"], told[f"fifo{index}"]
    note = model_saw(fake).split("look at this")[-1]
    assert "p0 could not be read" in note and "FIFO" in note


# -- finding 6: a file flipped between regular and a symlink to a secret ------------------------

FLIPPER = """
import os, shutil, sys
project, secret, stop = sys.argv[1:]


def settle(put):
    # The agent races us here on purpose (a write may make docs/ anew at any moment), so
    # every step of clearing the spot may find it changed: try again until ours lands.
    while True:
        try:
            if os.path.isdir(docs) and not os.path.islink(docs):
                shutil.rmtree(docs)
            elif os.path.lexists(docs):
                os.unlink(docs)
            return put()
        except OSError:
            continue


flip, docs = os.path.join(project, "flip.txt"), os.path.join(project, "docs")
link, plain, real = (os.path.join(project, name) for name in (".flip-link", ".flip-plain", ".docs-real"))
flips = 0
while not os.path.exists(stop):
    # flip.txt: a regular file, then a symlink to the key, swapped in by rename
    os.symlink(secret, link)
    os.rename(link, flip)
    with open(plain, "w") as handle:
        handle.write("harmless\\n")
    os.rename(plain, flip)
    # docs/: a directory, then a symlink to the key's folder (a write may make docs/ anew
    # while it is missing: whatever is there is cleared first)
    try:
        os.rename(docs, real)
    except OSError:  # docs/ was missing or a link at that moment: start the real one anew
        os.makedirs(real, exist_ok=True)
    settle(lambda: os.symlink(os.path.dirname(secret), docs))
    settle(lambda: os.rename(real, docs))
    flips += 1
print(flips)
"""

RACE_PROMPTS = 5
CALLS_PER_KIND = 6


def race_calls(turn: int) -> list[ToolCallSpec]:
    """Reads, writes and searches of a flipping file and through a flipping directory."""
    calls: list[ToolCallSpec] = []
    for n in range(CALLS_PER_KIND):
        calls += [
            ToolCallSpec("read_file", {"path": "flip.txt"}),
            ToolCallSpec("write_file", {"path": "flip.txt", "content": f"written {turn}.{n}\n"}),
            ToolCallSpec("read_file", {"path": "docs/id_ed25519"}),
            ToolCallSpec("write_file", {"path": "docs/id_ed25519", "content": f"written {turn}.{n}\n"}),
            ToolCallSpec("search", {"pattern": "SSH-KEY", "path": "docs"}),
            ToolCallSpec("search", {"pattern": "SSH-KEY", "path": "flip.txt"}),
        ]
    return calls


async def test_files_and_folders_flipped_to_symlinks_never_leak_the_secret_nor_write_outside(
    fake: FakeProvider, tmp_path: Path
) -> None:
    home = user_home(tmp_path)
    key = plant(home, HOME_SECRETS)[KEY]
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "id_ed25519").write_text("a harmless file of the same name\n")
    (project / "flip.txt").write_text("harmless\n")
    stop = tmp_path / "stop"
    fake.forget()
    fake.script(
        [
            reply
            for turn in range(RACE_PROMPTS)
            for reply in (Reply(tool_calls=race_calls(turn)), Reply(text="done"))
        ]
    )

    flipper = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FLIPPER, str(project), str(key), str(stop), stdout=asyncio.subprocess.PIPE
    )
    try:
        # A call that names the file while it is the link asks (outside the workspace); the
        # user says no. What must hold is that no call that was not asked reaches the secret.
        async with connected(server_env(home, fake), NO_CAPABILITIES, permission="reject_once") as (
            _,
            client,
        ):
            session = (await client.new_session(project))["sessionId"]
            await client.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
            for turn in range(RACE_PROMPTS):
                assert await client.prompt(session, f"turn {turn}", within=HANG) == {"stopReason": "end_turn"}
    finally:
        stop.touch()
        flips = int((await asyncio.wait_for(flipper.communicate(), HANG))[0] or 0)

    assert flips > 0  # the attacker was flipping all along
    assert key.read_text() == SSH_KEY  # never written through a link
    assert sorted(p.name for p in key.parent.iterdir()) == ["id_ed25519"]  # nothing made beside it
    assert "SSH-KEY-SECRET" not in model_saw(fake)
    assert len(tool_results(fake)) == RACE_PROMPTS * 6 * CALLS_PER_KIND  # every call was answered


# -- the editor's fs: the path is judged before and after the editor reads or writes ------------


def moving_editor(client: AcpClient, secret: Path, *, on: str, swap_back: bool) -> list[str]:
    """The client plays an editor that reads and writes whatever a path names, while an
    attacker swaps the file for a symlink to `secret` just as the editor gets to it with
    the method `on` (and, with `swap_back`, puts a regular file back right after)."""
    swapped: list[str] = []
    honest = client._fs

    async def racing(method: str, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(params["path"])
        if swapped or method != on:
            return await honest(method, params)
        swapped.append(method)
        original = path.read_text() if method == "fs/read_text_file" else ""
        link = path.with_name(".swap")
        link.symlink_to(secret)
        os.rename(link, path)
        answer = await honest(method, params)  # the editor follows the link, as editors do
        if swap_back:
            plain = path.with_name(".plain")
            plain.write_text(original)
            os.rename(plain, path)
        return answer

    client._fs = racing  # type: ignore[method-assign]
    return swapped


@pytest.mark.parametrize("swap_back", [False, True], ids=["left-linked", "swapped-back"])
async def test_the_editor_reading_a_path_swapped_to_a_secret_is_refused(
    fake: FakeProvider, tmp_path: Path, swap_back: bool
) -> None:
    home = user_home(tmp_path)
    key = plant(home, HOME_SECRETS)[KEY]
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("plain notes\n")
    fake.forget()
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"}, id="r")]), Reply(text="ok")]
    )
    async with connected(server_env(home, fake), PLAIN_CAPABILITIES) as (_, client):
        swapped = moving_editor(client, key, on="fs/read_text_file", swap_back=swap_back)
        session = (await client.new_session(project))["sessionId"]
        assert await client.prompt(session, "read notes", within=HANG) == {"stopReason": "end_turn"}
    assert swapped == ["fs/read_text_file"]  # the editor was asked, and the swap happened
    assert "SSH-KEY-SECRET" not in model_saw(fake)
    told = tool_results(fake)["r"]
    if swap_back:
        assert "plain notes" in told  # read again once the path was itself again
    else:
        assert "outside the workspace" in told


async def test_the_editor_writing_a_path_swapped_to_a_link_out_is_reported_failed(
    fake: FakeProvider, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    target = tmp_path / "outside.txt"
    target.write_text("outside\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("plain notes\n")
    fake.forget()
    write = ToolCallSpec("write_file", {"path": "notes.txt", "content": "new\n"}, id="w")
    fake.script([Reply(tool_calls=[write]), Reply(text="ok")])
    async with connected(server_env(home, fake), PLAIN_CAPABILITIES) as (_, client):
        swapped = moving_editor(client, target, on="fs/write_text_file", swap_back=False)
        session = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
        assert await client.prompt(session, "write notes", within=HANG) == {"stopReason": "end_turn"}
        assert final_statuses(client, session)["w"] == "failed"
    assert swapped == ["fs/write_text_file"]
    assert "moved while the editor wrote it" in tool_results(fake)["w"]
