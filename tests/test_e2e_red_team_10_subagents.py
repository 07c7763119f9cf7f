"""A tenth attack round (issue 19's hidden red team): what a subagent is held to. A child
of `delegate_task` got the parent's mode and "always" answers but not its permission
rules nor its hooks: in auto, the user's `deny = ["Bash(touch denied:*)"]` and `ask =
[...]` and a `pre_tool` hook that blocks held for the model's own calls and not at all for
the same call one `delegate_task` away. (`git push` denied in the user's config was one
subagent from running, unasked.)
"""

from __future__ import annotations

from pathlib import Path

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import LOCAL, User
from tests.support.server_setup import write_config

RULES = """
[permissions]
deny = ["Bash(touch denied:*)"]
ask = ["Bash(touch asked:*)"]

[[hooks.pre_tool]]
matcher = "Bash(touch hooked:*)"
command = "echo the hook says no >&2; exit 2"
"""


async def test_a_subagent_is_held_to_the_permission_rules_and_hooks(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    env = server_env(home, fake)
    write_config(env, RULES)
    calls = [
        ToolCallSpec("terminal", {"command": f"touch {name}"}, id=f"child_{name}")
        for name in ("denied", "asked", "hooked")
    ]
    tasks = {"tasks": [{"goal": "CHILD: set up the files"}]}
    fake.script(
        [Reply(tool_calls=[ToolCallSpec("delegate_task", tasks, id="delegate")]), Reply(text="Done.")]
    )
    fake.route("CHILD", [Reply(tool_calls=calls), Reply(text="child done")])
    user = User(first="reject_once")
    async with connected(env, LOCAL, permission=user) as (_, client):
        sid = await client.session_in_mode(project, "auto")
        assert await client.prompt(sid, "delegate the set-up") == {"stopReason": "end_turn"}
    assert user.asked_for() == ["child_asked"]
    assert [name for name in ("denied", "asked", "hooked") if (project / name).exists()] == []
