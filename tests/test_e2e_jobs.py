"""Background commands end to end, over the real server: `/jobs` lists the running ones; when
one ends, the card of the call that started it shows its exit code and last output, and the
model's next call carries one line saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_harness import AcpClient
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

JOB = "while [ ! -e go ]; do sleep 0.02; done; echo finished-job; exit 3"


async def said(client: AcpClient, sid: str, prompt: str) -> str:
    before = len(client.text(sid))
    await client.prompt(sid, prompt)
    return client.text(sid)[before:]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_background_jobs_end_reaches_its_card_and_the_model(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    start = ToolCallSpec("terminal", {"command": JOB, "background": True}, id="c_bg")
    fake.script([Reply(tool_calls=[start]), Reply(text="Started it.")])
    await client.prompt(sid, "start the job")

    assert "`proc-1`: `while [ ! -e go ]" in await said(client, sid, "/jobs")
    (project / "go").touch()
    # Each /jobs is a round trip to the server: this waits on the job's end as the server sees it.
    while "No background jobs are running." not in await said(client, sid, "/jobs"):
        pass

    fake.script([Reply(text="Noted.")])
    await client.prompt(sid, "what happened?")
    line = "[Background job proc-1 (`" + JOB + "`) ended: exit code 3; last output: finished-job]"
    told = json.dumps(fake.requests[-1].body["messages"][-1]["content"])
    assert json.dumps(line)[1:-1] in told
    card = [u for u in client.tool_updates("c_bg") if "proc-1 ended" in json.dumps(u.get("content"))]
    assert card and card[-1]["status"] == "failed"
    assert "exit code 3" in json.dumps(card[-1]["content"]) and "finished-job" in json.dumps(
        card[-1]["content"]
    )

    # a job the model killed itself is not reported again
    fake.script(
        [
            Reply(
                tool_calls=[ToolCallSpec("terminal", {"command": "sleep 60", "background": True}, id="c2")]
            ),
            Reply(tool_calls=[ToolCallSpec("process", {"handle": "proc-2", "action": "kill"}, id="c3")]),
            Reply(text="Killed."),
        ]
    )
    await client.prompt(sid, "start and stop")
    assert "No background jobs are running." in await said(client, sid, "/jobs")
    fake.script([Reply(text="ok")])
    await client.prompt(sid, "anything new?")
    assert "Background job proc-2" not in json.dumps(fake.requests[-1].body["messages"])


def test_the_chat_shows_a_background_jobs_end(fake: FakeProvider, tmp_path: Path, project: Path) -> None:
    """In `hermes-acp chat`, the card first said the job started; its end shows under it
    as soon as the server next speaks, not swallowed as a second end of a call already shown."""
    import pexpect

    from tests.support.chat_pty import chat_env, chat_in_pty

    env = chat_env(tmp_path, fake, columns=120)
    start = ToolCallSpec("terminal", {"command": JOB, "background": True}, id="c_chat_bg")
    fake.script([Reply(tool_calls=[start]), Reply(text="Started it.")])
    with chat_in_pty(env, project, "--mode", "yolo", timeout=60) as chat:
        chat.sendline("start the job")
        chat.expect_exact("Started it.")
        chat.expect_exact("›")  # the prompt is up again
        (project / "go").touch()
        # Each /jobs is a round trip to the server: this waits on the job's end as it sees it.
        while True:
            chat.sendline("/jobs")
            if chat.expect_exact(["No background jobs are running.", "background job running:"]) == 0:
                break
            chat.expect_exact("›")
        assert "proc-1 ended: exit code 3" in chat.before
        assert "finished-job" in chat.before
        chat.expect_exact("›")
        chat.sendcontrol("d")
        chat.expect(pexpect.EOF)
