"""An eleventh attack round (issue 19's hidden red team): limits. One model call made the
server do seconds of work on its event loop, end to end through the real server with a
scripted model.

`search` reads up to 8 MB of rg's output: some 400,000 matching lines of a file the
workspace holds (a cloned data dump, a log, or one a sandboxed `seq` wrote). Each line was
decoded and redacted on the event loop, 4-16 s for one call on this machine, and meanwhile
nothing else moved: another session's prompt, `session/cancel`, the exit.

And one reply may hold hundreds of distinct searches: all ran at once, 334 rg processes for
600 calls, so with a desktop's 1024 file descriptors a third failed with "Too many open
files" (and so would anything else the server opened meanwhile, another session's files and
the store's), and another session's `read_file` waited minutes.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.waiting import until

pytestmark = pytest.mark.asyncio(loop_scope="module")

NEEDLE = "needle-0123"


def rg_children(server_pid: int, needle: str = NEEDLE) -> list[int]:
    """The server's rg processes searching for `needle`."""
    found = []
    for children in Path(f"/proc/{server_pid}/task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:  # a thread that ended meanwhile
            continue
        for pid in pids:
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(needle.encode() in word for word in argv) and Path(argv[0].decode()).name == "rg":
                found.append(int(pid))
    return found


async def test_a_search_with_a_flood_of_matches_stalls_no_other_session(
    fake: FakeProvider, home: Path, tmp_path: Path
) -> None:
    flooded = tmp_path / "flooded"
    flooded.mkdir()
    (flooded / "dump.txt").write_text(f"{NEEDLE}\n" * 400_000)
    calm = tmp_path / "calm"
    calm.mkdir()
    search = ToolCallSpec("search", {"pattern": NEEDLE, "path": "dump.txt"}, id="flood")
    fake.forget()
    # The flooded session's turn stays open after its search (its next reply is held), so
    # the only work it leaves the server is that search's.
    fake.route("flood", [Reply(tool_calls=[search]), Reply(text="Found them.", hold_after_first_text=True)])
    fake.route("calm", [Reply(text="All calm.")])
    async with connected(server_env(home, fake), NO_CAPABILITIES) as (server, client):
        first = (await client.new_session(flooded))["sessionId"]
        second = (await client.new_session(calm))["sessionId"]
        flood = client.start_prompt(first, "flood")
        try:
            rg = (await until(lambda: rg_children(server.pid), "the search's rg"))[0]
            # rg has printed its 8 MB and been reaped: what is left of the call is the server's.
            await until(lambda: not Path(f"/proc/{rg}").exists(), "rg's end")
            assert await client.prompt(second, "calm") == {"stopReason": "end_turn"}
            # The other session was answered while the search's matches were still being
            # made ready: it did not wait for them.
            statuses = [u.get("status") for u in client.tool_updates("flood")]
            assert "completed" not in statuses, statuses
            await client.wait_for(
                lambda: "completed" in [u.get("status") for u in client.tool_updates("flood")]
            )
        finally:
            fake.release_stream()  # a failure above must not leave the flooded turn held
        assert await flood == {"stopReason": "end_turn"}
    results = [
        m["content"] for r in fake.requests for m in r.body["messages"] if m.get("tool_call_id") == "flood"
    ]
    shown = results[0]
    assert shown.startswith("at least ") and f"dump.txt:1: {NEEDLE}" in shown, shown[:300]


async def test_hundreds_of_searches_in_one_reply_all_answer(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    for i in range(20):
        (project / f"notes{i}.txt").write_text("hello world\n" * 100)
    # Distinct calls (identical ones run once): each its own rg.
    calls = [
        ToolCallSpec("search", {"pattern": f"(hello|flood{i:03}) world"}, id=f"s{i}") for i in range(400)
    ]
    fake.forget()
    fake.script([Reply(tool_calls=calls), Reply(text="Searched.")])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (min(1024, hard), hard)
    )  # a desktop's (the server inherits it)
    try:
        async with connected(server_env(home, fake), NO_CAPABILITIES) as (server, client):
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            session = (await client.new_session(project))["sessionId"]
            turn = client.start_prompt(session, "search", within=300)
            seen: list[int] = []  # how many of its rg ran, every 10 ms

            def ended() -> bool:
                seen.append(len(rg_children(server.pid, "flood")))
                return turn.done()

            await until(ended, "the searches' turn", within=300)
            assert await turn == {"stopReason": "end_turn"}
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert len(results) == len(calls)
    failed = [r for r in results if not r.startswith("2000 matches in 20 files")]
    assert failed == [], f"{len(failed)} of {len(calls)} failed, the first: {failed[:1]}"
    assert max(seen) <= 8, max(seen)  # what ran at once, as seen
