"""A tree too large to snapshot is refused at the cap, not after listing it all: the
listing is read as ripgrep writes it and stopped there (`checkpoint_max_files`).

The workspace here lists its first files at once and then never ends: a FIFO planted as a
folder's `.gitignore` holds ripgrep's walk forever (a stand-in for a tree of millions of
files, or a network mount that hangs). Read whole, the listing held the turn until
ripgrep's timeout; stopped at the cap, the turn goes on at once without a checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.acp_harness import PLAIN_CAPABILITIES, server_env, spawn_server
from tests.support.fake_provider import FakeProvider
from tests.support.tool_turns import call


def a_tree_that_lists_forever(project: Path, files: int) -> None:
    for number in range(files):
        (project / f"file-{number:05}.txt").write_text("x\n")
    (project / "zz").mkdir()
    os.mkfifo(project / "zz" / ".gitignore")  # ripgrep opens it to read its rules, and waits


async def test_a_tree_over_the_cap_is_refused_at_the_cap(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    a_tree_that_lists_forever(project, 3000)
    fake.script(call("write_file", {"path": "notes.md", "content": "kept\n"}, "write"))
    env = server_env(home, fake, HERMES_ACP_CHECKPOINT_MAX_FILES="10")
    async with spawn_server(env) as server:
        client = server.sdk_client(PLAIN_CAPABILITIES | {"terminal": False, "fs": {}})
        await client.initialize()
        sid = await client.session_in_mode(project, "accept_edits")
        assert await client.prompt(sid, "take notes") == {"stopReason": "end_turn"}
        assert (project / "notes.md").read_text() == "kept\n"
        await client.wait_for(lambda: "over the 10 files checkpoints take" in server.stderr)
        listing = await client.request("_hermes/rewind", {"sessionId": sid})
    [prompt] = listing["prompts"]
    assert prompt["files"] == [], listing  # no snapshot was taken of it
