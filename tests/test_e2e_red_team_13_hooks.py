"""Round thirteen of issue 19's hidden red team: hooks. A hook runs a workspace script
(`sh ./scripts/check.sh`, the README's own example), which the model rewrites unasked in
auto. Its output was read whole into the agent's memory before the first 64 KB were kept:
a script that prints a few hundred megabytes grew the server by as much (and `yes` until
the hook's timeout, by gigabytes), every session of the editor with it. End to end through
the real server, a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import LOCAL
from tests.support.server_setup import write_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOOK = '[[hooks.pre_tool]]\ncommand = "sh ./scripts/check.sh"\n'
PRINTED_MB = 256


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_a_hook_that_prints_hundreds_of_megabytes_does_not_grow_the_server(
    fake: FakeProvider, home: Path, project: Path, stream: str
) -> None:
    (project / "scripts").mkdir()
    redirect = "" if stream == "stdout" else " >&2"
    rewritten = f"head -c {PRINTED_MB * 1024 * 1024} /dev/zero | tr '\\0' x{redirect}\nexit 0\n"
    env = server_env(home, fake)
    write_config(env, HOOK)
    (project / "scripts" / "check.sh").write_text("exit 0\n")
    rewrite = ToolCallSpec("write_file", {"path": "scripts/check.sh", "content": rewritten}, id="w")
    read = ToolCallSpec("read_file", {"path": "scripts/check.sh"}, id="r")
    fake.script([Reply(tool_calls=[rewrite]), Reply(tool_calls=[read]), Reply(text="Done.")])
    async with connected(env, LOCAL) as (server, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        before = peak_kb(server.pid)
        assert await client.prompt(sid, "check the scripts") == {"stopReason": "end_turn"}
        grown_mb = (peak_kb(server.pid) - before) // 1024

    assert grown_mb < PRINTED_MB // 4, f"the server grew by {grown_mb} MB"
    result = next(m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool")
    assert "head -c" in str(result)  # the read ran: the hook let it through
