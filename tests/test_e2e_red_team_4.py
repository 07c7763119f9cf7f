"""A fourth attack round (issue 19's hidden red team), end to end through the real server
with a scripted model: the git credentials `read_file` hides, reached by other doors.

A repository's `.git/config` may hold a token (a remote URL's user part, CI's persisted
`extraheader`). The sandbox binds a copy without it over the file, and `read_file .git/config`
shows the model the same; but a workspace (a cloned repository may commit a symlink) or a
sandboxed `ln -s` can give the file another name, and the model reads it by that name.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, ToolCallSpec
from tests.support.red_team import LOCAL, git, run_turns, sandboxed, turn

TOKEN = "ghp_otherdoortoken0123456789"
HEADER = "ZXh0cmFoZWFkZXItc2VjcmV0LXZhbHVl"


def repository_with_credentials(project: Path) -> None:
    git("init", "-q", cwd=project)
    git("remote", "add", "origin", f"https://x-access-token:{TOKEN}@github.com/o/r.git", cwd=project)
    git("config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {HEADER}", cwd=project)


def leaked(text: str) -> list[str]:
    return [secret for secret in (TOKEN, HEADER) if secret in text]


def everything_sent(fake: FakeProvider) -> str:
    return "\n".join(json.dumps(request.body) for request in fake.requests)


async def test_git_credentials_stay_hidden_through_a_link_to_the_config(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # Held on main (search and read_file judge where a name leads): a committed link
    # (`notes.cfg -> .git/config`, `gitdir -> .git`) and one a sandboxed command makes.
    repository_with_credentials(project)
    (project / "notes.cfg").symlink_to(".git/config")
    (project / "gitdir").symlink_to(".git")
    calls = [
        ToolCallSpec("search", {"pattern": "ghp_|basic", "path": "notes.cfg"}, id="s-file"),
        ToolCallSpec("search", {"pattern": "ghp_|basic", "path": "gitdir"}, id="s-dir"),
        ToolCallSpec("read_file", {"path": "notes.cfg"}, id="r-file"),
        ToolCallSpec("read_file", {"path": "gitdir/config"}, id="r-dir"),
    ]
    fake.script(
        [
            *turn(*calls),
            *turn(sandboxed("ln -s .git/config made.cfg", "link")),
            *turn(ToolCallSpec("search", {"pattern": "x-access", "path": "made.cfg"}, id="s-made")),
        ]
    )
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        await run_turns(client, project, 3)
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert len(results) == 6 and "github.com/o/r.git" in results[0], results
    assert leaked("\n".join(results)) == [], results


async def test_an_instruction_file_linked_to_the_git_config_does_not_hand_over_its_token(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # A cloned repository commits `AGENTS.md -> .git/config`: the link stays inside the
    # repository, so it is followed, and the clone's token went into every system prompt.
    # The user's own `@.git/config` mention is shown as read_file shows it too.
    repository_with_credentials(project)
    (project / "AGENTS.md").symlink_to(".git/config")
    fake.script(turn())
    mention = {"type": "resource_link", "uri": (project / ".git" / "config").as_uri(), "name": "config"}
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        prompt = [{"type": "text", "text": "where does this push?"}, mention]
        assert await client.prompt(sid, prompt) == {"stopReason": "end_turn"}
    sent = everything_sent(fake)
    assert "github.com/o/r.git" in sent
    assert leaked(sent) == []
