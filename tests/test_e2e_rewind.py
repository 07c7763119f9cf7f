"""Rewind end to end: over the real server, `/rewind` and `_hermes/rewind` put back files an
edit and a command changed, cut the conversation (the model no longer sees later turns),
keep the cut-off turns in a fork, and keep files the user changed by hand since."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


def edit(path: str, old: str, new: str, call_id: str) -> list[Reply]:
    arguments = {"path": path, "old_text": old, "new_text": new}
    return [Reply(tool_calls=[ToolCallSpec("patch", arguments, id=call_id)]), Reply(text="Edited.")]


def run(command: str, call_id: str) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCallSpec("terminal", {"command": command}, id=call_id)]),
        Reply(text="Ran."),
    ]


def user_texts(body: dict[str, Any]) -> str:
    texts = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        texts.append(content if isinstance(content, str) else " ".join(p.get("text", "") for p in content))
    return "\n".join(texts)


async def said(client: AcpClient, sid: str, prompt: str) -> str:
    before = len(client.text(sid))
    assert await client.prompt(sid, prompt) == {"stopReason": "end_turn"}
    return client.text(sid)[before:]


async def test_rewind_restores_an_edit_and_a_command_and_cuts_the_conversation(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / ".gitignore").write_text("*.log\n")
    (project / "a.txt").write_text("one\n")
    (project / "build.log").write_text("ignored\n")
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})

    fake.script(edit("a.txt", "one", "two", "call_edit"))
    await client.prompt(sid, "first: make it two")
    fake.script(run("printf 'made\\n' > b.txt && printf 'three\\n' > a.txt", "call_run"))
    await client.prompt(sid, "second: run the script")
    fake.script([Reply(text="Nothing to change.")])
    await client.prompt(sid, "third: just look")
    assert (project / "a.txt").read_text() == "three\n"
    assert (project / "b.txt").read_text() == "made\n"
    assert not list(project.glob(".git*/**/objects"))  # nothing was written into the project

    listing = await said(client, sid, "/rewind")
    assert "1. first: make it two — `a.txt`" in listing
    assert "2. second: run the script — `a.txt`, `b.txt`" in listing
    assert "3. third: just look — no files changed" in listing

    listed = await client.request("_hermes/rewind", {"sessionId": sid})
    assert [p["files"] for p in listed["prompts"]] == [["a.txt"], ["a.txt", "b.txt"], []]

    outcome = await client.request("_hermes/rewind", {"sessionId": sid, "prompt": 2})
    assert (project / "a.txt").read_text() == "two\n"
    assert not (project / "b.txt").exists()
    assert outcome["restored"] == ["a.txt"]
    assert outcome["deleted"] == ["b.txt"]
    assert (project / "build.log").read_text() == "ignored\n"

    # the next prompt continues from before prompt 2: the model sees only prompt 1
    fake.script([Reply(text="Continuing.")])
    await client.prompt(sid, "fourth: go on")
    seen = user_texts(fake.requests[-1].body)
    assert "first: make it two" in seen
    assert "fourth: go on" in seen
    assert "second" not in seen and "third" not in seen

    # the cut-off turns are in a fork, which a client can list and load
    forked = outcome["forkedSessionId"]
    listed_sessions = await client.request("session/list", {"cwd": str(project)})
    assert forked in [s["sessionId"] for s in listed_sessions["sessions"]]
    await client.request("session/load", {"sessionId": forked, "cwd": str(project), "mcpServers": []})
    replayed = client.text(forked, kind="user_message_chunk")
    assert "third: just look" in replayed

    # `/rewind 1 files` puts the file back without touching the conversation
    answer = await said(client, sid, "/rewind 1 files")
    assert "Restored: `a.txt`" in answer
    assert (project / "a.txt").read_text() == "one\n"
    listed = await client.request("_hermes/rewind", {"sessionId": sid})
    assert [p["text"] for p in listed["prompts"]] == ["first: make it two", "fourth: go on"]


async def test_rewind_keeps_a_file_changed_by_hand_unless_forced(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "a.txt").write_text("one\n")
    (project / "c.txt").write_text("c1\n")
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCallSpec("patch", {"path": "a.txt", "old_text": "one", "new_text": "two"}, id="e1"),
                    ToolCallSpec("patch", {"path": "c.txt", "old_text": "c1", "new_text": "c2"}, id="e2"),
                ]
            ),
            Reply(text="Edited."),
        ]
    )
    await client.prompt(sid, "edit both")
    (project / "c.txt").write_text("mine\n")  # the user's own change after the agent's

    answer = await said(client, sid, "/rewind 1 files")
    assert (project / "a.txt").read_text() == "one\n"
    assert (project / "c.txt").read_text() == "mine\n"
    assert "changed by hand since: `c.txt`" in answer

    await said(client, sid, "/rewind 1 files force")
    assert (project / "c.txt").read_text() == "c1\n"


async def test_rewind_is_advertised_and_refuses_a_prompt_that_does_not_exist(
    client: AcpClient, session: str
) -> None:
    hello = await client.initialize()
    assert hello["agentCapabilities"]["_meta"]["hermes"]["rewind"] == {"method": "_hermes/rewind"}
    with pytest.raises(Exception, match="no prompts"):
        await client.request("_hermes/rewind", {"sessionId": session, "prompt": 1})


def planted_git(project: Path, marker: Path) -> None:
    """A repository whose config and attributes name a command for every way git runs one
    on its own: fsmonitor, clean/smudge filters (one-shot and long-running), a diff driver,
    hooks by path and in .git/hooks. Each leaves a file outside the workspace."""

    def ran(name: str) -> str:
        return f"touch {marker}-{name} #"

    for folder in ("objects", "refs/heads", "info", "hooks"):
        (project / ".git" / folder).mkdir(parents=True, exist_ok=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / ".git" / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n"
        f'\tfsmonitor = "{ran("fsmonitor")}"\n\thooksPath = .githooks\n'
        f'[filter "evil"]\n\tclean = "{ran("clean")}"\n\tsmudge = "{ran("smudge")}"\n'
        f'\tprocess = "{ran("process")}"\n\trequired = true\n'
        f'[diff "evil"]\n\ttextconv = "{ran("textconv")}"\n'
    )
    (project / ".gitattributes").write_text("* filter=evil diff=evil\n")
    for folder, hooks in ((project / ".git" / "hooks", "git-hook"), (project / ".githooks", "path-hook")):
        folder.mkdir(exist_ok=True)
        for name in (
            "post-checkout",
            "pre-commit",
            "post-commit",
            "post-index-change",
            "reference-transaction",
        ):
            (folder / name).write_text(f"#!/bin/sh\ntouch {marker}-{hooks}-{name}\n")
            (folder / name).chmod(0o755)


async def test_checkpoints_and_rewind_never_run_the_workspaces_git_config(
    client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    """The workspace is the attacker's: snapshotting it and rewinding it must run nothing
    its git config names, and must store and put back the bytes as they are (no filter)."""
    marker = tmp_path / "escaped"
    planted_git(project, marker)
    (project / "a.txt").write_text("one\n")
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    fake.script(edit("a.txt", "one", "two", "call_edit"))
    await client.prompt(sid, "first: make it two")
    fake.script(run("printf 'made\\n' > b.txt", "call_run"))
    await client.prompt(sid, "second: run it")

    answer = await said(client, sid, "/rewind 1")
    assert "Restored: `a.txt`" in answer
    assert (project / "a.txt").read_text() == "one\n"
    assert not (project / "b.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("escaped")) == []


async def test_rewind_chat_cuts_the_conversation_and_leaves_the_files(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    (project / "a.txt").write_text("one\n")
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    fake.script(edit("a.txt", "one", "two", "chat_edit_1"))
    await client.prompt(sid, "first: make it two")
    fake.script(edit("a.txt", "two", "three", "chat_edit_2"))
    await client.prompt(sid, "second: make it three")

    answer = await said(client, sid, "/rewind 2 chat")
    assert (project / "a.txt").read_text() == "three\n"  # the files stay as they are
    assert "the turns cut off are in session `" in answer
    forked = answer.split("the turns cut off are in session `", 1)[1].split("`", 1)[0]
    fake.script([Reply(text="Continuing.")])
    await client.prompt(sid, "third: go on")
    seen = user_texts(fake.requests[-1].body)
    assert "first: make it two" in seen and "second" not in seen
    await client.request("session/load", {"sessionId": forked, "cwd": str(project), "mcpServers": []})
    assert "second: make it three" in client.text(forked, kind="user_message_chunk")
