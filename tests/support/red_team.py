"""The third red-team round's turns: a user who answers "always" once (or what it is
told) and rejects the rest, a model's commands in and outside the sandbox, turns in auto."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.support.acp_harness import PLAIN_CAPABILITIES, AcpClient, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec

LOCAL = PLAIN_CAPABILITIES | {"terminal": False, "fs": {}}


class User:
    """Answers `first` ("always") to the first question, rejects every later one, and keeps
    them all."""

    def __init__(self, first: str = "allow_always") -> None:
        self.first = first
        self.asked: list[dict[str, Any]] = []

    def __call__(self, params: dict[str, Any]) -> str:
        self.asked.append(params)
        return self.first if len(self.asked) == 1 else "reject_once"

    def asked_for(self) -> list[str]:
        return [p["toolCall"]["toolCallId"] for p in self.asked]


def unconfined(command: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec("terminal", {"command": command, "unconfined": True}, id=call_id)


def sandboxed(command: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec("terminal", {"command": command}, id=call_id)


def turn(*calls: ToolCallSpec) -> list[Reply]:
    return [Reply(tool_calls=list(calls)), Reply(text="Done.")]


async def run_turns(client: AcpClient, project: Path, prompts: int) -> None:
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
    for i in range(prompts):
        assert await client.prompt(sid, f"step {i}") == {"stopReason": "end_turn"}


async def always_then_rewrite(
    fake: Any,
    env: dict[str, str],
    project: Path,
    command: str,
    path: str,
    content: str,
    *,
    before: list[Reply] | None = None,
) -> User:
    """The user answers "always" for `command` outside the sandbox; in the next turn the
    model rewrites `path` (unasked, in auto) and runs `command` outside again. `before`:
    turns of the model's first. The user, to read what was asked."""
    before = before or []
    rewrite = ToolCallSpec("write_file", {"path": path, "content": content}, id="w")
    fake.script([*before, *turn(unconfined(command, "first")), *turn(rewrite, unconfined(command, "later"))])
    user = User()
    async with connected(env, LOCAL, permission=user) as (_, client):
        await run_turns(client, project, len(before) // 2 + 2)
    return user


def offered_always(user: User) -> bool:
    return "allow_always" in {o["optionId"] for o in user.asked[0]["options"]}


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


async def sandboxed_env_leaks(
    fake: FakeProvider, home: Path, project: Path, hidden: dict[str, str], kept: dict[str, str]
) -> None:
    """One auto turn whose sandboxed `env` sends what it sees: none of `hidden`'s values may
    be in it, every one of `kept` must."""
    fake.script(turn(sandboxed("env; echo probe-ran", "probe")))
    async with connected(server_env(home, fake, **hidden, **kept), LOCAL) as (_, client):
        await run_turns(client, project, 1)
    result = next(m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool")
    assert "probe-ran" in result, result
    assert [name for name, value in hidden.items() if value in result] == [], result
    assert all(f"{name}={value}" in result for name, value in kept.items()), result


def asked_for_each_outside(client: AcpClient, calls: list[ToolCallSpec], names: str) -> None:
    """Each of `calls` asked, with no "always", naming why: what `names` (the editor, a
    coding agent) runs the file outside the sandbox."""
    asked = {r["toolCall"]["toolCallId"]: r for r in client.permission_requests}
    assert sorted(asked) == sorted(call.id for call in calls)
    for request in asked.values():
        reason = request["_meta"]["hermes"]["reason"]
        assert names in reason and "outside the sandbox" in reason, reason
        assert "allow_always" not in {o["optionId"] for o in request["options"]}


def tool_text(fake: FakeProvider) -> str:
    """The tool results the model was sent in its last request, as one text."""
    messages = fake.requests[-1].body["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "tool")


async def command_under_rules(
    client: AcpClient, fake: FakeProvider, project: Path, rules: str, command: str, *, ran: bool = True
) -> str:
    """One sandboxed `command` in auto, in a new session of `project` whose
    `.hermes/config.toml` holds `rules` under [permissions]; the tool results, once it is
    checked that the command ran (or, `ran=False`, did not)."""
    (project / ".hermes").mkdir(exist_ok=True)
    (project / ".hermes" / "config.toml").write_text(f"[permissions]\n{rules}\n")
    sid = (await client.new_session(project))["sessionId"]
    await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
    call = ToolCallSpec("terminal", {"command": f"{command}; s=$?; echo probe-ran; exit $s"}, id="t")
    fake.script([Reply(tool_calls=[call]), Reply(text="Ok.")])
    assert await client.prompt(sid, "tidy up") == {"stopReason": "end_turn"}
    results = tool_text(fake)
    assert ("probe-ran" in results) is ran, results
    return results
