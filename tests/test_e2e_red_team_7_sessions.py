"""Round seven of issue 19's hidden red team: what one workspace's model may read of the
user's other sessions. End to end through the real server, a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

pytestmark = pytest.mark.asyncio(loop_scope="module")


def tool_result(body: dict[str, Any], call_id: str) -> str:
    return next(m["content"] for m in body["messages"] if m.get("tool_call_id") == call_id)


async def test_session_search_does_not_reach_into_another_repository_below(
    fake: FakeProvider, tmp_path: Path
) -> None:
    # A home kept in git (dotfiles) is the repository of every folder below it that has none
    # of its own: a downloaded project in ~/Downloads/tool. Its model's session_search took
    # "this workspace" as every session under the home, so another repository's (~/work/app,
    # its own .git) conversations, a key pasted there included, reached a prompt-injected
    # model. A session in a folder of the same repository is still found.
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    app = home / "work" / "app"
    (app / ".git").mkdir(parents=True)
    notes = home / "notes"
    notes.mkdir()
    downloaded = home / "Downloads" / "tool"
    downloaded.mkdir(parents=True)
    fake.forget()
    fake.script([Reply(text="Noted."), Reply(text="Noted too.")])
    search = ToolCallSpec("session_search", {"query": "zanzibar"}, id="search")
    async with connected(server_env(home, fake), NO_CAPABILITIES) as (_, client):
        private = (await client.new_session(app))["sessionId"]
        await client.prompt(private, "the zanzibar key is sk-live-PRIVATE-0123")
        shared = (await client.new_session(notes))["sessionId"]
        await client.prompt(shared, "zanzibar is the parser's name")
        fake.script([Reply(tool_calls=[search]), Reply(text="Found.")])
        tool = (await client.new_session(downloaded))["sessionId"]
        await client.prompt(tool, "what do we know about zanzibar?")
        found = tool_result(fake.requests[-1].body, "search")
        # A folder in no repository still finds the sessions of its subfolders.
        plain = tmp_path / "plain"
        (plain / "sub").mkdir(parents=True)
        fake.script([Reply(text="Noted.")])
        below = (await client.new_session(plain / "sub"))["sessionId"]
        await client.prompt(below, "zanzibar lives in sub")
        fake.script([Reply(tool_calls=[search]), Reply(text="Found.")])
        await client.prompt((await client.new_session(plain))["sessionId"], "and here?")
        found_below = tool_result(fake.requests[-1].body, "search")
    assert shared in found
    assert private not in found and "PRIVATE" not in found
    assert below in found_below and private not in found_below
