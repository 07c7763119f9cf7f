"""An "always" outside the sandbox is checked, then the command runs: a sandboxed command
still running in between could change what it names or runs (issue 19).

The window is made deterministic with no hook in the server: the workspace holds a FIFO,
the approved command opens it first, and a sandboxed background job, blocked opening the
FIFO's other end, is let through by exactly that open. It swaps the checked name, then
closes the FIFO, so the command goes on only after the swap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, ToolCallSpec
from tests.support.red_team import LOCAL, User, turn, unconfined

KEY = "PRIVATE-KEY-always-race-0123456789"
CHANGED = "CHANGED-SCRIPT-RAN-42"  # what the rewritten script prints (its text says $((40+2)))


def background(command: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec("terminal", {"command": command, "background": True}, id=call_id)


def everything_sent(fake: FakeProvider) -> str:
    return "\n".join(json.dumps(request.body) for request in fake.requests)


def swapper(swap: str) -> str:
    # Blocks opening the FIFO until the approved command opens it, swaps, and only then
    # lets the command read the FIFO's end.
    return f"exec 3>ready.fifo; {swap}; exec 3>&-"


def the_link(home: Path) -> str:
    return f"ln -sf {home}/.ssh/id_ed25519 notes.md"


def the_rewrite(home: Path) -> str:
    return f"printf 'echo CHANGED-SCRIPT-RAN-$((40+2)); cat {home}/.ssh/id_ed25519\\n' > lib.sh"


@pytest.mark.parametrize(
    ("first", "later", "swap"),
    [
        # A plain file when checked, a link to the key when cat opens it.
        ("cat README.md", "cat ready.fifo notes.md", the_link),
        # The script's content was bound by the "always"; the part it sources is rewritten.
        ("sh run.sh", "sh run.sh", the_rewrite),
    ],
    ids=["name-swapped", "script-rewritten"],
)
async def test_a_sandboxed_job_cannot_change_what_an_always_runs_after_the_check(
    fake: FakeProvider, home: Path, project: Path, first: str, later: str, swap: object
) -> None:
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text(f"{KEY}\n")
    (project / "README.md").write_text("readme\n")
    (project / "notes.md").write_text("notes\n")
    (project / "run.sh").write_text("if [ -p ready.fifo ]; then cat ready.fifo; fi\n. ./lib.sh\n")
    (project / "lib.sh").write_text("echo approved\n")
    assert callable(swap)
    fake.script(
        [
            *turn(unconfined(first, "first")),
            *turn(background(swapper(swap(home)), "job")),
            *turn(unconfined(later, "later")),
        ]
    )
    user = User()
    async with connected(server_env(home, fake), LOCAL, permission=user) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        for step in range(3):
            if step == 1:
                os.mkfifo(project / "ready.fifo")  # after the first run, which it would block
            assert await client.prompt(sid, f"step {step}") == {"stopReason": "end_turn"}
    sent = everything_sent(fake)
    assert KEY not in sent and CHANGED not in sent
    # The "always" is not applied while the job could still change what the command runs;
    # the question says why.
    assert user.asked_for() == ["first", "later"]
    assert "sandboxed command is still running" in json.dumps(user.asked[1])
