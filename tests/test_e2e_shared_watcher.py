"""Sessions on one folder share one workspace watcher, end to end: one inotify instance
however many sessions, freed with the last of them; each session still learns what changed
outside its own turns, and reads wake no watcher."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient, ServerProcess
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.waiting import until
from tests.support.watching import watcher_caught_up

pytestmark = pytest.mark.asyncio(loop_scope="module")

IN_ACCESS, IN_CLOSE_NOWRITE, IN_OPEN = 0x001, 0x010, 0x020
_probes = itertools.count(1)


def inotify_masks(pid: int) -> list[list[int]]:
    """Per inotify instance of the process, the event mask of each of its watches."""
    instances: list[list[int]] = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) != "anon_inode:inotify":
                continue
            lines = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines()
            fields = [
                dict(p.split(":", 1) for p in line.split()[1:])
                for line in lines
                if line.startswith("inotify ")
            ]
            instances.append([int(f["mask"], 16) for f in fields])
    return instances


def inotify_instances(pid: int) -> int:
    return len(inotify_masks(pid))


def last_user_text(body: dict[str, Any]) -> str:
    content = next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


async def a_session_after_a_turn(client: AcpClient, fake: FakeProvider, cwd: Path) -> str:
    """A session whose watcher runs (a fresh session's starts with its first turn)."""
    sid = (await client.new_session(cwd))["sessionId"]
    fake.script([Reply(text="Hello.")])
    await client.prompt(sid, "hello")
    return sid


async def filesystem_clock_passed(scratch: Path) -> None:
    """Until a file written now is stamped later than every turn that has ended: what is
    written after this is judged by its timestamp as the user's, never a turn's."""
    now = time.time_ns()
    probe = scratch / f"clock-{next(_probes)}"

    def stamped_later() -> bool:
        probe.write_text("")
        return probe.stat().st_ctime_ns > now

    await until(stamped_later, "the filesystem clock to pass the last turn")


async def close(client: AcpClient, *sids: str) -> None:
    for sid in sids:
        await client.request("session/close", {"sessionId": sid})


async def test_sessions_on_one_folder_share_one_watcher_until_the_last_closes(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    # Each folder also has one instance of the sandbox's repository finder
    # (`core/sandbox/repo_finder.py`: repositories planted at any depth), shared by its
    # sessions like the watcher, made with the folder's first sandbox and kept for the
    # process (up to 8 folders, the least recently used closed first): a folder's second
    # session walks nothing again.
    finders = 1
    before = inotify_instances(server.pid)
    first = await a_session_after_a_turn(client, fake, project)
    assert inotify_instances(server.pid) == before + 1 + finders
    second = await a_session_after_a_turn(client, fake, project)
    assert inotify_instances(server.pid) == before + 1 + finders  # not one per session

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    third = await a_session_after_a_turn(client, fake, elsewhere)
    assert inotify_instances(server.pid) == before + 2 + 2 * finders  # another folder has its own

    await close(client, first)
    assert inotify_instances(server.pid) == before + 2 + 2 * finders  # the second session still watches
    await filesystem_clock_passed(tmp_path)
    (project / "notes.txt").write_text("saved after the first session closed\n")
    await watcher_caught_up(server.pid, project)
    fake.script([Reply(text="I see.")])
    await client.prompt(second, "look again")
    assert "notes.txt" in last_user_text(fake.requests[-1].body)

    await close(client, second)
    await until(
        lambda: inotify_instances(server.pid) == before + 1 + 2 * finders, "the shared watcher to stop"
    )
    await close(client, third)
    await until(lambda: inotify_instances(server.pid) == before + 2 * finders, "the last watcher to stop")


async def test_each_session_learns_what_changed_outside_its_own_turns(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path, tmp_path: Path
) -> None:
    writer = await a_session_after_a_turn(client, fake, project)
    other = await a_session_after_a_turn(client, fake, project)
    fake.script(
        [
            Reply(
                tool_calls=[ToolCallSpec("write_file", {"path": "by_agent.txt", "content": "x"}, id="call_w")]
            ),
            Reply(text="Written."),
        ]
    )
    await client.prompt(writer, "write by_agent.txt")
    assert (project / "by_agent.txt").exists()
    await filesystem_clock_passed(tmp_path)
    (project / "by_user.txt").write_text("the user's own\n")
    await watcher_caught_up(server.pid, project)

    fake.script([Reply(text="ok"), Reply(text="ok")])
    await client.prompt(writer, "go on")
    writers_view = last_user_text(fake.requests[-1].body)
    await client.prompt(other, "go on")
    others_view = last_user_text(fake.requests[-1].body)

    # Its own write is no news to the session that made it; to the other it is another
    # program's, as it was when each session had a watcher of its own.
    assert "by_user.txt" in writers_view and "by_agent.txt" not in writers_view
    assert "by_user.txt" in others_view and "by_agent.txt" in others_view
    await close(client, writer, other)


async def test_reading_a_file_wakes_no_watcher(
    server: ServerProcess, client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    """The watches ask for changes only: a file opened to be read (by read_file, search,
    the user's build) is no event for the watcher to wake for."""
    (project / "src").mkdir()
    sid = await a_session_after_a_turn(client, fake, project)
    masks = [mask for instance in inotify_masks(server.pid) for mask in instance]
    assert len(masks) >= 2  # the project and src
    assert all(mask & (IN_OPEN | IN_CLOSE_NOWRITE | IN_ACCESS) == 0 for mask in masks), [
        hex(m) for m in masks
    ]
    await close(client, sid)
