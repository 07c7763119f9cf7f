"""Issue 19, finding 8, for the file tools: the secrets the sandbox hides from commands are
refused by read_file, search and list_files too (one list), end to end through the real
server with a scripted model that asks for them as a prompt-injected one would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import NO_CAPABILITIES, PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.homes import plant, user_home

pytestmark = pytest.mark.asyncio(loop_scope="module")
FS = {"local": NO_CAPABILITIES, "editor-fs": PLAIN_CAPABILITIES}

PROJECT_SECRETS = {
    ".env": "DOTENV-SECRET-1",
    ".envrc": "ENVRC-SECRET-2",
    ".env_prod": "ENVPROD-SECRET-3",
    "app/.env-local": "ENVLOCAL-SECRET-4",
}
HOME_SECRETS = {
    ".ssh/id_ed25519": "SSHKEY-SECRET-5",
    ".netrc": "NETRC-SECRET-6",
    ".hermes-acp/config.toml": "# AGENTHOME-SECRET-7",
}


def calls(*specs: tuple[str, dict[str, Any]]) -> list[Reply]:
    tool_calls = [ToolCallSpec(name, args, id=f"call_{i}") for i, (name, args) in enumerate(specs)]
    return [Reply(tool_calls=tool_calls), Reply(text="Done.")]


def model_saw(fake: FakeProvider) -> str:
    return "\n".join(json.dumps(request.body) for request in fake.requests)


def tool_results(fake: FakeProvider) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] for m in fake.requests[-1].body["messages"] if m.get("role") == "tool"
    }


def secrets_seen(fake: FakeProvider, files: dict[str, str]) -> list[str]:
    sent = model_saw(fake)
    return [marker for marker in files.values() if marker.lstrip("# ") in sent]


@pytest.mark.parametrize("where", list(FS))
async def test_dotenv_files_in_the_workspace_are_neither_read_nor_searched(
    fake: FakeProvider, tmp_path: Path, where: str
) -> None:
    home, project = user_home(tmp_path), tmp_path / "project"
    plant(project, PROJECT_SECRETS)
    plant(project, {".env.example": "TEMPLATE-READABLE-8", "notes.txt": "SECRET-free notes"})
    reads = [("read_file", {"path": path}) for path in PROJECT_SECRETS]
    fake.forget()
    fake.script(
        calls(
            *reads,
            ("read_file", {"path": ".env.example"}),
            ("search", {"pattern": "SECRET"}),
            ("search", {"pattern": "SECRET", "glob": ".env*"}),
            ("search", {"pattern": "SECRET", "path": ".env"}),
            ("list_files", {}),
            ("write_file", {"path": "app/.env.local", "content": "NEW=1\n"}),
        )
    )
    async with connected(server_env(home, fake), FS[where]) as (_, client):
        session = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": session, "modeId": "accept_edits"})
        assert await client.prompt(session, "look at the config") == {"stopReason": "end_turn"}
    assert secrets_seen(fake, PROJECT_SECRETS) == []
    told = tool_results(fake)
    for index in range(len(reads)):
        assert "is hidden: it holds credentials" in told[f"call_{index}"], told[f"call_{index}"]
    assert "TEMPLATE-READABLE-8" in told[f"call_{len(reads)}"]
    assert "notes.txt" in told[f"call_{len(reads) + 1}"]  # the rest is still searched
    assert ".env" in told[f"call_{len(reads) + 4}"]  # names are listed, contents are not
    assert (project / "app" / ".env.local").read_text() == "NEW=1\n"  # a new one may be written


@pytest.mark.parametrize("where", list(FS))
async def test_home_secrets_are_refused_when_the_workspace_is_the_home_folder(
    fake: FakeProvider, tmp_path: Path, where: str
) -> None:
    home = user_home(tmp_path, HOME_SECRETS)
    plant(home, {"work/readme.txt": "SECRET-free readme"})
    fake.forget()
    fake.script(
        calls(
            *[("read_file", {"path": path}) for path in HOME_SECRETS],
            ("read_file", {"path": str(home / ".ssh" / "id_ed25519")}),
            ("search", {"pattern": "SECRET"}),
            ("search", {"pattern": "SECRET", "path": ".ssh", "glob": "*"}),
            ("list_files", {}),
            ("write_file", {"path": ".ssh/authorized_keys", "content": "ssh-ed25519 AAAA attacker\n"}),
        )
    )
    async with connected(server_env(home, fake), FS[where]) as (_, client):
        session = (await client.new_session(home))["sessionId"]
        await client.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
        assert await client.prompt(session, "look around") == {"stopReason": "end_turn"}
    assert secrets_seen(fake, HOME_SECRETS) == []
    told = tool_results(fake)
    assert all("is hidden: it holds credentials" in told[f"call_{i}"] for i in range(4)), told
    assert "work/readme.txt" in told["call_4"]
    listing = told["call_6"]
    assert "work/readme.txt" in listing and "id_ed25519" not in listing
    assert "is hidden" in told["call_7"] and not (home / ".ssh" / "authorized_keys").exists()
